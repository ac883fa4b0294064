/**
 * The README's embedding program, run as a user runs it: plain node on the built packages. Its
 * SQLite file goes under a git-ignored `.appexec/` beside the program, or under `APPEXEC_DATA`;
 * without a master key it warns that signing keys are stored in the clear and says how to give
 * one, and with `APPEXEC_MASTER_KEY` it seals them and says nothing.
 */
import { describe, expect, it } from "@effect/vitest"
import { execFileSync, spawnSync } from "node:child_process"
import { randomBytes } from "node:crypto"
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { fileURLToPath } from "node:url"

const program = fileURLToPath(new URL("./main.mjs", import.meta.url))

/** Runs the program in `cwd` with `env` added (and no APPEXEC_ variable of the test's own). */
const runIn = (cwd: string, env: Record<string, string>) => {
  const clean = Object.fromEntries(Object.entries(process.env).filter(([name]) => !name.startsWith("APPEXEC_")))
  return spawnSync(process.execPath, [program, "Ada"], {
    cwd,
    env: { ...clean, ...env },
    encoding: "utf8",
    timeout: 60_000
  })
}

describe("embedding example", () => {
  it("imports the app, runs it in-process on SQLite under APPEXEC_DATA and prints the greeting", () => {
    const cwd = mkdtempSync(join(tmpdir(), "appexec-embedding-"))
    try {
      const data = join(cwd, "data")
      const run = runIn(cwd, { APPEXEC_DATA: data })
      expect(run.status, run.stderr).toBe(0)
      expect(run.stdout).toContain("status: completed")
      expect(run.stdout).toContain("Greeting (text): Hello Ada, in a warm tone.")
      expect(existsSync(join(data, "appexec.db"))).toBe(true)
      expect(existsSync(join(cwd, "appexec.db"))).toBe(false)
      // No master key: the warning names the setting and how to make a key.
      const output = `${run.stdout}${run.stderr}`
      expect(output).toContain("signing keys are stored in the clear")
      expect(output).toContain("APPEXEC_MASTER_KEY")
      expect(output).toContain("openssl rand -base64 32")
    } finally {
      rmSync(cwd, { recursive: true, force: true })
    }
  })

  it("with APPEXEC_MASTER_KEY seals the signing keys and gives no warning", () => {
    const cwd = mkdtempSync(join(tmpdir(), "appexec-embedding-"))
    try {
      const run = runIn(cwd, {
        APPEXEC_DATA: join(cwd, "data"),
        APPEXEC_MASTER_KEY: randomBytes(32).toString("base64")
      })
      expect(run.status, run.stderr).toBe(0)
      expect(run.stdout).toContain("Greeting (text): Hello Ada, in a warm tone.")
      expect(`${run.stdout}${run.stderr}`).not.toContain("in the clear")
    } finally {
      rmSync(cwd, { recursive: true, force: true })
    }
  })

  it("by default writes its database under .appexec/ beside it, which git ignores", () => {
    const cwd = mkdtempSync(join(tmpdir(), "appexec-embedding-"))
    try {
      const run = runIn(cwd, {})
      expect(run.status, run.stderr).toBe(0)
      const file = fileURLToPath(new URL("./.appexec/appexec.db", import.meta.url))
      expect(existsSync(file)).toBe(true)
      expect(existsSync(join(cwd, "appexec.db"))).toBe(false)
      const ignored = execFileSync("git", ["check-ignore", file], { cwd: join(file, ".."), encoding: "utf8" })
      expect(ignored.trim()).toBe(file)
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
