/**
 * What a newcomer reads first: `appexec --help` in two readable columns; every command's and
 * subcommand's `--help` naming the whole command, listing its subcommands and describing each
 * argument in words of its own; and a missing API key named as such, each said once.
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

/** Every command group and its subcommands, and the commands without any. */
const groups: Readonly<Record<string, ReadonlyArray<string>>> = {
  workspaces: ["create", "list", "set"],
  keys: ["create", "list", "revoke"],
  apps: ["import", "import-comfyui", "list"],
  executions: ["list", "cancel", "watch"],
  "signing-key": ["rotate"],
  "master-key": ["reseal"],
  secrets: ["set", "list", "delete"],
  media: ["migrate", "sweep", "stores", "forget"],
  config: ["check"]
}
const leaves = ["serve", "worker", "prune", "migrate", "run"]
const everyCommand: ReadonlyArray<ReadonlyArray<string>> = [
  ...leaves.map((name) => [name]),
  ...Object.entries(groups).flatMap(([group, subs]) => [[group], ...subs.map((sub) => [group, sub])])
]

/** What @effect/cli says of an argument or option by its type alone. */
const typeOnly = /^\s*(A user-defined piece of text( that is confidential)?|A true or false value|An integer)\.$/m

/** The lines of the section under `heading` (up to the next heading). */
const section = (text: string, heading: string): ReadonlyArray<string> => {
  const lines = text.split("\n")
  const at = lines.indexOf(heading)
  if (at === -1) return []
  const end = lines.findIndex((line, i) => i > at && /^[A-Z]+$/.test(line))
  return lines.slice(at + 1, end === -1 ? undefined : end)
}

describe("appexec help and usage errors", () => {
  it("every command's --help names the whole command, lists its subcommands and describes each argument", async () => {
    const helps: Array<readonly [ReadonlyArray<string>, string]> = []
    // A few at a time: each is a process.
    for (let i = 0; i < everyCommand.length; i += 6) {
      const batch = everyCommand.slice(i, i + 6)
      const outputs = await Promise.all(batch.map((words) => appexec(...words, "--help")))
      outputs.forEach(({ stdout, code }, j) => {
        expect(code, batch[j]!.join(" ")).toBe(0)
        helps.push([batch[j]!, stdout])
      })
    }
    for (const [words, text] of helps) {
      const name = words.join(" ")
      expect(text, name).toMatch(new RegExp(`^\\$ appexec ${name}( |$)`, "m"))
      expect(text, name).not.toMatch(typeOnly)
      expect(section(text, "DESCRIPTION").join("").trim(), `${name} has a description`).not.toBe("")
      const subs = groups[words[0]!]
      if (words.length === 1 && subs !== undefined) {
        const listed = section(text, "COMMANDS").map((line) => /^ {2}([a-z-]+)/.exec(line)?.[1]).filter(Boolean)
        expect(listed, name).toEqual(subs)
      }
      // Each argument (<NAME>) is followed by a description of its own.
      const args = section(text, "ARGUMENTS").filter((line) => line.trim() !== "")
      args.forEach((line, i) => {
        if (line.startsWith("<")) expect(args[i + 1] ?? "", `${name} ${line}`).toMatch(/^ {2}[A-Z]/)
      })
    }
  }, 120_000)

  it("appexec keys --help lists create, list and revoke with what each does", async () => {
    const { stdout } = await appexec("keys", "--help")
    expect(section(stdout, "COMMANDS").filter((line) => line !== "")).toEqual([
      "  create  Create an API key; prints only the key (shown once)",
      "  list    List the active keys, oldest first: hint, workspace, user, created, last used, id (tab-separated)",
      "  revoke  Revoke a key by its hint (as keys list shows it), its id, or the whole key"
    ])
    expect(stdout).toMatch(/^\$ appexec keys$/m)
  })

  it("appexec run with name=value given without --input shows the command line it belongs in", async () => {
    const { stdout, stderr, code } = await appexec("run", "Thumbnail", "image=@photo.png", "size=small")
    expect(code).not.toBe(0)
    expect(stdout).toBe("")
    expect(stderr).toBe(
      "appexec: Inputs go after --input (or -i): appexec run Thumbnail --input image=@photo.png --input size=small\n"
    )
  })

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

  it("names the whole command in the usage line, and leaves out what only says an argument's type", () => {
    const help = [
      "USAGE",
      "",
      "$ create --workspace NAME <NAME>",
      "",
      "ARGUMENTS",
      "",
      "<NAME>",
      "",
      "  A user-defined piece of text.",
      "",
      "  The workspace's name",
      ""
    ].join("\n")
    expect(HelpText.tidy(help, HelpText.commandWords(["keys", "create", "--help"]))).toBe(
      [
        "USAGE",
        "",
        "$ appexec keys create --workspace NAME <NAME>",
        "",
        "ARGUMENTS",
        "",
        "<NAME>",
        "",
        "  The workspace's name",
        ""
      ]
        .join("\n")
    )
    // Not help: left as it is, whatever its lines.
    expect(HelpText.tidy("A user-defined piece of text.\n$ create", ["create"])).toBe(
      "A user-defined piece of text.\n$ create"
    )
  })

  it("appexec --help has no line padded with spaces", async () => {
    const { stdout, code } = await appexec("--help")
    expect(code).toBe(0)
    const lines = stdout.split("\n")
    expect(lines.filter((line) => / {24,}/.test(line) || / $/.test(line))).toEqual([])
    expect(lines).toContain(
      "  serve                Run the appexec service (HTTP, worker and webhooks) on SQLite or PostgreSQL"
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
