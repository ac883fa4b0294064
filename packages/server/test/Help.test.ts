/**
 * What a newcomer reads first: `appexec --help` in two readable columns, and a missing API key
 * named as such, each said once.
 */
import { describe, expect, it } from "@effect/vitest"
import { execFile } from "node:child_process"
import * as HelpText from "../src/internal/HelpText.js"
import { bin } from "./support/Bin.js"

/** Runs `appexec …args` without `APPEXEC_API_KEY`; stdout, stderr and exit code. */
const appexec = (...args: Array<string>) =>
  new Promise<{ stdout: string; stderr: string; code: number }>((resolve) => {
    const env = { ...process.env }
    delete env["APPEXEC_API_KEY"]
    execFile(process.execPath, [bin, ...args], { env }, (error, stdout, stderr) =>
      resolve({ stdout, stderr, code: error === null ? 0 : Number(error.code ?? 1) }))
  })

describe("appexec help and usage errors", () => {
  it("lists subcommands as names and descriptions, with no padding", () => {
    const padded = [
      "USAGE",
      "",
      "$ appexec",
      "",
      "COMMANDS",
      "",
      `  - serve [--port integer] [--host text]${" ".repeat(300)}Run the service`,
      "",
      `  - keys${" ".repeat(330)}`,
      "",
      `  - keys create [--data directory] <NAME>${" ".repeat(290)}Create an API key`,
      ""
    ].join("\n")
    expect(HelpText.tidy(padded)).toBe(
      [
        "USAGE",
        "",
        "$ appexec",
        "",
        "COMMANDS",
        "",
        "  serve        Run the service",
        "",
        "  keys",
        "",
        "  keys create  Create an API key",
        ""
      ].join("\n")
    )
    expect(HelpText.tidy("no list here   ")).toBe("no list here   ")
  })

  it("appexec --help has no line padded with spaces", async () => {
    const { stdout, code } = await appexec("--help")
    expect(code).toBe(0)
    const lines = stdout.split("\n")
    expect(lines.filter((line) => / {24,}/.test(line) || / $/.test(line))).toEqual([])
    expect(lines).toContain(
      "  serve               Run the appexec service (HTTP, worker and webhooks) on SQLite or PostgreSQL"
    )
    expect(Math.max(...lines.map((line) => line.length))).toBeLessThan(200)
  })

  it("appexec run without a key names APPEXEC_API_KEY and --key, once", async () => {
    const { stdout, stderr, code } = await appexec("run", "Greeting", "--input", "who=x")
    expect(code).not.toBe(0)
    expect(stdout).toBe("")
    expect(stderr).toBe(
      "appexec: No API key: set APPEXEC_API_KEY or pass --key (the key `appexec serve` printed, or one from `appexec keys create`).\n"
    )
  })
})
