/**
 * Child processes of node types (`Subprocess`, docs/nodes.md#child-processes), as real processes:
 * each runs in a process group of its own, so a SIGINT sent to its parent's group (a terminal's
 * Ctrl-C) does not reach it; `kill` ends its whole group; a command that cannot be run says so by
 * its exit status; and it is gone within a second of its parent's SIGKILL (the watchdog). The
 * parent of the last test is a real node process running the built module (`dist/`).
 */
import { Subprocess } from "@appexec/nodes"
import { describe, expect, it } from "@effect/vitest"
import { type Duration, Effect, Schedule } from "effect"
import { type ChildProcess, spawn } from "node:child_process"
import { existsSync } from "node:fs"
import { fileURLToPath } from "node:url"
import { groupOf, liveInGroup } from "./support/Processes.js"

/** The built module, as a process that embeds appexec loads it. */
const built = fileURLToPath(new URL("../dist/Subprocess.js", import.meta.url))

/** Retries `check` every 20 ms until it holds, for at most `within`. */
const eventually = <A>(what: string, check: () => A | undefined, within: Duration.DurationInput = "5 seconds") =>
  Effect.suspend(() => {
    const value = check()
    return value === undefined ? Effect.fail(new Error(`not yet: ${what}`)) : Effect.succeed(value)
  }).pipe(
    Effect.retry(Schedule.spaced("20 millis")),
    Effect.timeoutFail({ duration: within, onTimeout: () => new Error(`${what}: not within ${within}`) })
  )

/** The exit status of `child` once it has closed. */
const closed = (child: ChildProcess) =>
  Effect.async<number | null>((resume) => {
    child.once("close", (code) => resume(Effect.succeed(code)))
  })

describe("Subprocess", () => {
  it.live("the command runs in a process group of its own, and kill ends the whole group", () =>
    Effect.gen(function*() {
      const child = Subprocess.spawn("sleep", ["30"], { stdout: "ignore", stderr: "ignore" })
      const group = child.pid!
      expect(groupOf(group)).toBe(group)
      expect(groupOf(group)).not.toBe(groupOf(process.pid))
      // The watchdog (sh), its reader and the command, all in that group.
      const members = yield* eventually(
        "sleep started",
        () => {
          const live = liveInGroup(group)
          return live.some((p) => p.command === "sleep") ? live : undefined
        }
      )
      expect(members.map((p) => p.command).sort()).toEqual(["sh", "sh", "sleep"])
      yield* Subprocess.kill(child)
      yield* eventually("the group gone", () => (liveInGroup(group).length === 0 ? true : undefined), "1 second")
    }))

  it.live("a command that cannot be run exits with a status that says so", () =>
    Effect.gen(function*() {
      const missing = Subprocess.spawn("/nonexistent/tool", ["-x"], { stdout: "ignore", stderr: "ignore" })
      expect(Subprocess.notStarted(yield* closed(missing))).toBe(true)
      const failing = Subprocess.spawn("sh", ["-c", "exit 3"], { stdout: "ignore", stderr: "ignore" })
      const code = yield* closed(failing)
      expect(code).toBe(3)
      expect(Subprocess.notStarted(code)).toBe(false)
    }))

  it.live(
    "a SIGINT to the parent's group does not reach the child; the parent's SIGKILL ends it within a second",
    () =>
      Effect.gen(function*() {
        expect(existsSync(built), `${built} is missing: run \`npm run build\` first`).toBe(true)
        // A parent in a group of its own, as a terminal runs a command: it ignores SIGINT, starts
        // `sleep` through Subprocess and prints the watchdog's pid (its child's group).
        const script = `
          import { spawn } from ${JSON.stringify(built)}
          process.on("SIGINT", () => console.log("parent got SIGINT"))
          const child = spawn("sleep", ["30"], { stdout: "ignore", stderr: "ignore" })
          console.log("group " + child.pid)
          setInterval(() => {}, 1000)
        `
        const parent = yield* Effect.acquireRelease(
          Effect.sync(() =>
            spawn(process.execPath, ["--input-type=module", "-e", script], {
              detached: true,
              stdio: ["ignore", "pipe", "inherit"]
            })
          ),
          (parent) =>
            Effect.sync(() => parent.exitCode === null && parent.signalCode === null && parent.kill("SIGKILL"))
        )
        let out = ""
        parent.stdout!.on("data", (chunk) => (out += String(chunk)))
        const group = yield* eventually("the child's group", () => {
          const m = /group (\d+)/.exec(out)
          return m === null ? undefined : Number(m[1])
        })
        const sleeping = yield* eventually("sleep started", () => liveInGroup(group).find((p) => p.command === "sleep"))

        // Ctrl-C in a terminal: SIGINT to the parent's whole group. The parent hears it; the child does not.
        process.kill(-parent.pid!, "SIGINT")
        yield* eventually("the parent got SIGINT", () => (out.includes("parent got SIGINT") ? true : undefined))
        expect(liveInGroup(group).map((p) => p.pid)).toContain(sleeping.pid)

        // The parent killed with SIGKILL: nothing of its child's group is left a second later.
        const killedAt = Date.now()
        process.kill(parent.pid!, "SIGKILL")
        yield* eventually(
          "the child's group gone",
          () => (liveInGroup(group).length === 0 ? true : undefined),
          "1 second"
        )
        expect(Date.now() - killedAt).toBeLessThan(1000)
      }).pipe(Effect.scoped),
    20_000
  )
})
