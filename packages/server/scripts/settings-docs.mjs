/**
 * Writes the settings tables of docs/cli.md from the settings' definitions (the built
 * `dist/settings/SettingsDocs.js`): `npm run docs:settings -w @appexec/server` after a change to
 * a setting. `test/SettingsDocs.test.ts` fails while the two differ.
 */
import { readFileSync, writeFileSync } from "node:fs"
import { fileURLToPath } from "node:url"

const docs = fileURLToPath(new URL("../../../docs/cli.md", import.meta.url))
const { update } = await import("../dist/settings/SettingsDocs.js")
const updated = update(readFileSync(docs, "utf8"))
if (updated === undefined) {
  console.error("docs/cli.md has no settings section (its begin and end markers)")
  process.exit(1)
}
writeFileSync(docs, updated)
console.log("docs/cli.md: settings tables written")
