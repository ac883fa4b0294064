/**
 * The compiled `appexec` command, as users run it: `node dist/appexec.js`, no TypeScript loader.
 * `npm test` builds it first (`pretest`); a test run without a build fails here with the reason.
 */
import { existsSync } from "node:fs"
import { fileURLToPath } from "node:url"

/** Path of the compiled command. */
export const bin = fileURLToPath(new URL("../../dist/appexec.js", import.meta.url))

if (!existsSync(bin)) throw new Error(`${bin} is missing: run \`npm run build\` before these tests (npm test does)`)
