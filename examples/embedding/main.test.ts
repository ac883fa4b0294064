/**
 * The README's embedding program, run as a user runs it: plain node on the built packages, in a
 * fresh directory where it creates its SQLite file.
 */
import { describe, expect, it } from "@effect/vitest"
import { execFileSync } from "node:child_process"
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { fileURLToPath } from "node:url"

const program = fileURLToPath(new URL("./main.mjs", import.meta.url))

describe("embedding example", () => {
  it("imports the app, runs it in-process on SQLite (its folder made) and prints the greeting", () => {
    const cwd = mkdtempSync(join(tmpdir(), "appexec-embedding-"))
    try {
      const out = execFileSync(process.execPath, [program, "Ada"], { cwd, encoding: "utf8", timeout: 60_000 })
      expect(out).toContain("status: completed")
      expect(out).toContain("Greeting (text): Hello Ada!")
      expect(existsSync(join(cwd, ".appexec", "appexec.db"))).toBe(true)
    } finally {
      rmSync(cwd, { recursive: true, force: true })
    }
  })

  it("is the program the README shows, word for word", () => {
    const readme = readFileSync(new URL("../../README.md", import.meta.url), "utf8")
    const body = readFileSync(program, "utf8").split("\n").filter((line) => !line.startsWith("// @ts-check"))
    const code = body.slice(body.findIndex((line) => line.startsWith("import "))).join("\n").trim()
    expect(readme).toContain(code)
  })
})
