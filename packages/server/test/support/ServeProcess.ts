/**
 * `appexec serve` as a real child process on a temp data directory and port 0, for tests that
 * go through the real server and socket: its output is watched, it is killed with the scope.
 */
import { Deferred, Effect } from "effect"
import { spawn } from "node:child_process"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { fileURLToPath } from "node:url"

const bin = fileURLToPath(new URL("../../src/bin.ts", import.meta.url))
const tsx = fileURLToPath(new URL("../../../../node_modules/.bin/tsx", import.meta.url))

/** A fresh temp data directory, removed with the scope. */
export const tempDataDir = Effect.acquireRelease(
  Effect.sync(() => mkdtempSync(join(tmpdir(), "appexec-serve-"))),
  (dir) => Effect.sync(() => rmSync(dir, { recursive: true, force: true }))
)

/**
 * Starts `appexec serve --port 0 --data dataDir …args` with `env` added to the environment and
 * waits for the first-start lines: the base URL and the printed key.
 */
export const startServe = (dataDir: string, args: ReadonlyArray<string> = [], env: Record<string, string> = {}) =>
  Effect.gen(function* () {
    const child = yield* Effect.acquireRelease(
      Effect.sync(() =>
        spawn(tsx, [bin, "serve", "--port", "0", "--data", dataDir, ...args], {
          env: { ...process.env, APPEXEC_LOG_FORMAT: "json", ...env }
        })
      ),
      (child) =>
        Effect.sync(() => {
          if (child.exitCode === null) child.kill("SIGKILL")
        })
    )
    const output = { stdout: "", stderr: "" }
    const started = yield* Deferred.make<{ readonly key: string; readonly baseUrl: string }, Error>()
    const check = () => {
      const match = /curl -H 'x-api-key: (aex_[A-Za-z0-9_-]{43})' (http:\/\/127\.0\.0\.1:\d+)\/v1\/apps/.exec(output.stdout)
      if (match !== null) Deferred.unsafeDone(started, Effect.succeed({ key: match[1]!, baseUrl: match[2]! }))
    }
    child.stdout.on("data", (d) => ((output.stdout += String(d)), check()))
    child.stderr.on("data", (d) => (output.stderr += String(d)))
    child.once("exit", (code) =>
      Deferred.unsafeDone(started, Effect.fail(new Error(`serve exited with ${code}:\n${output.stdout}\n${output.stderr}`)))
    )
    const first = yield* Deferred.await(started).pipe(Effect.timeoutFail({ duration: "30 seconds", onTimeout: () => new Error(`serve did not start:\n${output.stderr}`) }))
    return { ...first, child, output }
  })
