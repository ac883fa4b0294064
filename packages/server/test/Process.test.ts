/**
 * The `appexec` command as an installed user runs it: one compiled process under plain node,
 * plain text when its output is not a terminal, each error said once, and nothing left serving
 * when its process is killed.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { execFile } from "node:child_process"
import { readdirSync, readFileSync } from "node:fs"
import { bin } from "./support/Bin.js"
import { spawnServe, tempDataDir } from "./support/ServeProcess.js"

/** Runs `appexec …args` to completion with stdout and stderr piped (not a terminal). */
const appexec = (...args: Array<string>) =>
  Effect.async<{ stdout: string; stderr: string; code: number }>((resume) => {
    const child = execFile(process.execPath, [bin, ...args], { timeout: 30_000 }, (error, stdout, stderr) =>
      resume(Effect.succeed({ stdout, stderr, code: error === null ? 0 : Number(error.code ?? 1) })))
    return Effect.sync(() =>
      child.kill("SIGKILL")
    )
  })

const ESC = "\u001b"

/** The pids whose parent is `pid` (Linux `/proc`). */
const childrenOf = (pid: number) =>
  readdirSync("/proc")
    .filter((entry) => /^\d+$/.test(entry))
    .filter((entry) => {
      try {
        // The command name is in parentheses and may hold spaces; the parent pid follows the state.
        const stat = readFileSync(`/proc/${entry}/stat`, "utf8")
        return Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]) === pid
      } catch {
        return false
      }
    })

const occurrences = (text: string, part: string) => text.split(part).length - 1

describe("the appexec command as a process", () => {
  it("is compiled JavaScript that node runs directly", () => {
    expect(readFileSync(bin, "utf8").split("\n", 1)[0]).toBe("#!/usr/bin/env node")
  })

  it.live("--help prints plain text on a pipe: no colour codes, nothing on stderr", () =>
    Effect.gen(function*() {
      const help = yield* appexec("--help")
      expect(help.code).toBe(0)
      expect(help.stdout).toContain("USAGE")
      expect(help.stdout).toContain("serve")
      expect(help.stdout).not.toContain(ESC)
      expect(help.stderr).toBe("")
    }), 30_000)

  it.live("a bad option and a failing command each say why exactly once, on stderr only", () =>
    Effect.gen(function*() {
      const badOption = yield* appexec("serve", "--port", "abc")
      expect(badOption.code).not.toBe(0)
      expect(badOption.stdout).toBe("")
      expect(occurrences(badOption.stderr, "'abc'")).toBe(1)
      expect(badOption.stderr).not.toContain(ESC)

      const dataDir = yield* tempDataDir
      const failing = yield* appexec("keys", "revoke", "aex_nope", "--data", dataDir)
      expect(failing.code).toBe(1)
      expect(failing.stdout).toBe("")
      expect(occurrences(failing.stderr, "No active key has the hint, id or value 'aex_nope'")).toBe(1)
    }).pipe(Effect.scoped), 30_000)

  it.live(
    "serve is one process; kill -9 of its pid leaves nothing answering on its port",
    () =>
      Effect.gen(function*() {
        const dataDir = yield* tempDataDir
        const serve = yield* spawnServe(dataDir)
        const listening = yield* serve.waitFor(/listening on (http:\/\/\S+)/, "stderr")
        const baseUrl = listening[1]!
        const pid = serve.child.pid!
        // No child processes: the command is not a wrapper around another process.
        expect(childrenOf(pid)).toEqual([])
        const before = yield* Effect.promise(() => fetch(`${baseUrl}/v1/apps`).then((r) => r.status))
        expect(before).toBe(401)

        process.kill(pid, "SIGKILL")
        expect(yield* serve.exited("10 seconds")).toEqual({ code: null, signal: "SIGKILL" })
        const after = yield* Effect.promise(() =>
          fetch(`${baseUrl}/v1/apps`).then(
            () => "answered",
            (error: unknown) => String((error as { cause?: { code?: string } }).cause?.code)
          )
        )
        expect(after).toBe("ECONNREFUSED")
      }).pipe(Effect.scoped),
    30_000
  )
})
