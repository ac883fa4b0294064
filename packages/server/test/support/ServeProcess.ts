/**
 * `appexec serve` as a real child process on a temp data directory and port 0, for tests that
 * go through the real server and socket: its output is watched, it is killed with the scope.
 */
import { Deferred, type Duration, Effect } from "effect"
import { spawn } from "node:child_process"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { bin } from "./Bin.js"

/** A fresh temp directory (data or apps), removed with the scope. */
export const tempDataDir = Effect.acquireRelease(
  Effect.sync(() => mkdtempSync(join(tmpdir(), "appexec-serve-"))),
  (dir) => Effect.sync(() => rmSync(dir, { recursive: true, force: true }))
)

/** How a command is spawned. */
export interface SpawnOptions {
  /**
   * In a process group of its own, as a terminal runs a command: a signal sent to the group
   * (`process.kill(-pid, …)`) is a terminal's Ctrl-C. The group is killed with the scope.
   */
  readonly group?: boolean
  /** Another build of the command (the previous release's, `PreviousRelease`); default this checkout's. */
  readonly program?: string
}

/**
 * Spawns `appexec …args` with `env` added to the environment, without waiting for anything.
 * `waitFor` resolves with the first match of `pattern` in a stream and fails when the process
 * exits first; `exited` resolves with the exit code and signal. Every wait is bounded by
 * `within`. The process is killed with the scope.
 */
export const spawnAppexec = (
  args: ReadonlyArray<string>,
  env: Record<string, string> = {},
  options: SpawnOptions = {}
) =>
  Effect.gen(function*() {
    const child = yield* Effect.acquireRelease(
      Effect.sync(() =>
        spawn(process.execPath, [options.program ?? bin, ...args], {
          env: { ...process.env, APPEXEC_LOG_FORMAT: "json", ...env },
          detached: options.group === true
        })
      ),
      (child) =>
        Effect.sync(() => {
          if (child.exitCode !== null || child.signalCode !== null) return
          if (options.group === true) process.kill(-child.pid!, "SIGKILL")
          else child.kill("SIGKILL")
        })
    )
    const output = { stdout: "", stderr: "" }
    const watchers = new Set<() => void>()
    const exit = yield* Deferred.make<{ readonly code: number | null; readonly signal: NodeJS.Signals | null }>()
    child.stdout.on("data", (d) => ((output.stdout += String(d)), watchers.forEach((w) => w())))
    child.stderr.on("data", (d) => ((output.stderr += String(d)), watchers.forEach((w) => w())))
    child.once("exit", (code, signal) => {
      // The last output may still be in the pipes when `exit` fires; `close` follows it.
      child.once("close", () => Deferred.unsafeDone(exit, Effect.succeed({ code, signal })))
    })
    const describe = () => `stdout:\n${output.stdout}\nstderr:\n${output.stderr}`

    const waitFor = (pattern: RegExp, stream: "stdout" | "stderr", within: Duration.DurationInput = "30 seconds") =>
      Effect.gen(function*() {
        const found = yield* Deferred.make<RegExpExecArray, Error>()
        const check = () => {
          const match = pattern.exec(output[stream])
          if (match !== null) Deferred.unsafeDone(found, Effect.succeed(match))
        }
        watchers.add(check)
        check()
        return yield* Deferred.await(found).pipe(
          Effect.raceFirst(
            Deferred.await(exit).pipe(
              Effect.flatMap(({ code, signal }) =>
                Effect.fail(
                  new Error(`appexec exited (${code ?? signal}) before ${pattern} on ${stream}:\n${describe()}`)
                )
              )
            )
          ),
          Effect.timeoutFail({
            duration: within,
            onTimeout: () => new Error(`no ${pattern} on ${stream} within ${within}:\n${describe()}`)
          }),
          Effect.ensuring(Effect.sync(() => watchers.delete(check)))
        )
      })

    const exited = (within: Duration.DurationInput) =>
      Deferred.await(exit).pipe(
        Effect.timeoutFail({
          duration: within,
          onTimeout: () => new Error(`appexec did not exit within ${within}:\n${describe()}`)
        })
      )

    return { child, output, waitFor, exited }
  })

/** Spawns `appexec serve --port 0 --data dataDir …args` (see `spawnAppexec`). */
export const spawnServe = (
  dataDir: string,
  args: ReadonlyArray<string> = [],
  env: Record<string, string> = {},
  options: SpawnOptions = {}
) => spawnAppexec(["serve", "--port", "0", "--data", dataDir, ...args], env, options)

/**
 * Starts `appexec serve --port 0 --data dataDir …args` with `env` added to the environment and
 * waits for the first-start lines: the base URL and the printed key.
 */
export const startServe = (
  dataDir: string,
  args: ReadonlyArray<string> = [],
  env: Record<string, string> = {},
  options: SpawnOptions = {}
) =>
  Effect.gen(function*() {
    const serve = yield* spawnServe(dataDir, args, env, options)
    const match = yield* serve.waitFor(
      /curl -H 'x-api-key: (aex_[A-Za-z0-9_-]{43})' (http:\/\/127\.0\.0\.1:\d+)\/v1\/apps/,
      "stdout"
    )
    return { ...serve, key: match[1]!, baseUrl: match[2]! }
  })

/** Starts `appexec serve` again on a data directory that was bootstrapped already: waits for the base URL. */
export const restartServe = (
  dataDir: string,
  args: ReadonlyArray<string> = [],
  env: Record<string, string> = {},
  options: SpawnOptions = {}
) =>
  Effect.gen(function*() {
    const serve = yield* spawnServe(dataDir, args, env, options)
    const match = yield* serve.waitFor(/appexec is listening on (http:\/\/127\.0\.0\.1:\d+) /, "stderr")
    return { ...serve, baseUrl: match[1]! }
  })

/** Runs `appexec run …args` against a served instance until it exits (within `within`): its exit code and output. */
export const appexecRun = (
  args: ReadonlyArray<string>,
  serve: { readonly baseUrl: string; readonly key: string },
  env: Record<string, string>,
  within: Duration.DurationInput = "60 seconds"
) =>
  Effect.gen(function*() {
    const run = yield* spawnAppexec(["run", ...args, "--base-url", serve.baseUrl], {
      ...env,
      APPEXEC_API_KEY: serve.key
    })
    const { code } = yield* run.exited(within)
    return { code, stdout: run.output.stdout, stderr: run.output.stderr }
  })
