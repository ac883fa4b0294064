/**
 * docs/cli.md's settings tables are the settings themselves (`SettingsDocs`): the section between
 * its markers is exactly what the definitions write, so a setting added, renamed or given another
 * default, variable or description cannot leave the docs behind (`npm run docs:settings -w
 * @appexec/server` writes them again). Every setting has its row; `serve --help` shows each
 * default and variable too.
 */
import { describe, expect, it } from "@effect/vitest"
import { readFileSync } from "node:fs"
import { fileURLToPath } from "node:url"
import * as Catalog from "../src/settings/Catalog.js"
import * as SettingsDocs from "../src/settings/SettingsDocs.js"

const docs = readFileSync(fileURLToPath(new URL("../../../docs/cli.md", import.meta.url)), "utf8")

describe("docs/cli.md's settings tables", () => {
  it("are what the settings write (run `npm run docs:settings -w @appexec/server` after changing one)", () => {
    const from = docs.indexOf(SettingsDocs.BEGIN)
    const to = docs.indexOf(SettingsDocs.END)
    expect(from).toBeGreaterThan(0)
    expect(docs.slice(from, to + SettingsDocs.END.length)).toBe(SettingsDocs.section())
    expect(SettingsDocs.update(docs)).toBe(docs)
  })

  it("have a row for every setting, with its flag, variable and default", () => {
    const section = SettingsDocs.section()
    for (const setting of Catalog.all) {
      const row = section.split("\n").find((line) => new RegExp(`^\\| \`--${setting.name}[ \`]`).test(line))
      expect(row, setting.name).toBeDefined()
      expect(row, setting.name).toContain(`\`${setting.variable}\``)
      expect(row, setting.name).toContain(setting.shownDefault)
    }
  })
})
