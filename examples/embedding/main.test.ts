/**
 * The README's embedding program, run as a user runs it: plain node on the built packages. Its
 * SQLite file goes under `.appexec/` of the directory it runs in (a fresh one here; its own folder,
 * as its README says, where git ignores it), with the master key `createAppexec` keeps beside it:
 * nothing is stored in the clear, so no warning.
 */
import { describe, expect, it } from "@effect/vitest"
import { execFileSync, spawnSync } from "node:child_process"
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { fileURLToPath } from "node:url"

const program = fileURLToPath(new URL("./main.mjs", import.meta.url))
const folder = fileURLToPath(new URL(".", import.meta.url))

/** Runs the program in `cwd` (with no APPEXEC_ variable of the test's own). */
const runIn = (cwd: string) => {
  const clean = Object.fromEntries(Object.entries(process.env).filter(([name]) => !name.startsWith("APPEXEC_")))
  return spawnSync(process.execPath, [program, "Ada"], { cwd, env: clean, encoding: "utf8", timeout: 60_000 })
}

describe("embedding example", () => {
  it("imports the app, runs it in-process on SQLite (its folder made) and prints the greeting", () => {
    const cwd = mkdtempSync(join(tmpdir(), "appexec-embedding-"))
    try {
      const run = runIn(cwd)
      expect(run.status, run.stderr).toBe(0)
      expect(run.stdout).toContain("status: completed")
      expect(run.stdout).toContain("Greeting (text): Hello Ada!")
      expect(existsSync(join(cwd, ".appexec", "appexec.db"))).toBe(true)
      expect(existsSync(join(cwd, ".appexec", "master.key"))).toBe(true)
      expect(`${run.stdout}${run.stderr}`).not.toContain("in the clear")
    } finally {
      rmSync(cwd, { recursive: true, force: true })
    }
  })

  it("run from its own folder, as its README says, writes under .appexec/ there, which git ignores", () => {
    const run = runIn(folder)
    expect(run.status, run.stderr).toBe(0)
    const file = join(folder, ".appexec", "appexec.db")
    expect(existsSync(file)).toBe(true)
    const ignored = execFileSync("git", ["check-ignore", file], { cwd: folder, encoding: "utf8" })
    expect(ignored.trim()).toBe(file)
  })

  it("is the program the README shows, word for word", () => {
    const readme = readFileSync(new URL("../../README.md", import.meta.url), "utf8")
    const body = readFileSync(program, "utf8").split("\n").filter((line) => !line.startsWith("// @ts-check"))
    const code = body.slice(body.findIndex((line) => line.startsWith("import "))).join("\n").trim()
    expect(readme).toContain(code)
  })
})
