/**
 * `appexec executions cancel`, run as a second process beside `appexec serve` on the same data
 * directory: the cancel reaches the server's worker through the database, which interrupts the run
 * within a second; the execution ends `failed` with the cancel message. On SQLite and on PostgreSQL.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect, Schedule } from "effect"
import { backends } from "./support/Backends.js"
import { appexec } from "./support/Bin.js"
import { delayApps, json, slowApps } from "./support/DelayApps.js"
import { spawnAppexec, startServe, tempDataDir } from "./support/ServeProcess.js"

describe("appexec executions cancel", () => {
  for (const backend of backends) {
    it.scopedLive(
      `cancels a running execution of a serving process within a second, on ${backend.name}`,
      () =>
        Effect.gen(function*() {
          const dataDir = yield* tempDataDir
          const env = yield* backend.env
          const serve = yield* startServe(dataDir, ["--apps", yield* slowApps], env)
          const headers = { "x-api-key": serve.key, "content-type": "application/json" }
          const apps = yield* json(`${serve.baseUrl}/v1/apps?search=Slow`, { headers })
          const appId = (apps.data as unknown as Array<{ appId: string }>)[0]!.appId
          const started = yield* json(`${serve.baseUrl}/v1/apps/${appId}/executions`, {
            method: "POST",
            headers,
            body: JSON.stringify({ inputs: { prompt: "x" } })
          })
          const id = String(started.data.executionId)
          // Read it until it runs (the worker takes it at once; a loaded machine may take longer).
          yield* json(`${serve.baseUrl}/v1/executions/${id}`, { headers }).pipe(
            Effect.repeat({
              schedule: Schedule.spaced("20 millis"),
              until: (seen) => seen.data.status === "running"
            }),
            Effect.timeoutFail({ duration: "10 seconds", onTimeout: () => new Error(`${id} did not start running`) })
          )
          const canceled = yield* appexec(env, "executions", "cancel", id, "--data", dataDir)
          expect(canceled.code).toBe(0)
          expect(canceled.stdout).toBe(`${id}\tcancel requested\n`)
          const requestedAt = Date.now()
          const done = yield* json(`${serve.baseUrl}/v1/executions/${id}`, {
            headers: { ...headers, prefer: "wait=5" }
          })
          expect(Date.now() - requestedAt).toBeLessThan(1_500)
          expect(done.data).toMatchObject({ status: "failed", errorMessage: "The execution was canceled." })
          const again = yield* appexec(env, "executions", "cancel", id, "--data", dataDir)
          expect(again.code).not.toBe(0)
          expect(again.stderr).toContain("has already finished")
        }),
      60_000
    )
  }
})

describe("attempts across processes: a worker killed with SIGKILL, its execution taken over", () => {
  for (const backend of backends) {
    it.scopedLive(
      `the poll, the takeover's warning and \`executions list\` say attempt 0, then 1, then 2, on ${backend.name}`,
      () =>
        Effect.gen(function*() {
          const dataDir = yield* tempDataDir
          const env = yield* backend.env
          // HTTP only: what it accepts stays queued until a worker comes.
          const serve = yield* startServe(dataDir, [
            "--apps",
            yield* delayApps({ name: "Pause", ms: 4_000 }),
            "--no-worker"
          ], env)
          const headers = { "x-api-key": serve.key, "content-type": "application/json" }
          const apps = yield* json(`${serve.baseUrl}/v1/apps?search=Pause`, { headers })
          const appId = (apps.data as unknown as Array<{ appId: string }>)[0]!.appId
          const started = yield* json(`${serve.baseUrl}/v1/apps/${appId}/executions`, {
            method: "POST",
            headers,
            body: JSON.stringify({ inputs: { prompt: "x" } })
          })
          const id = String(started.data.executionId)
          const poll = (extra: Record<string, string> = {}) =>
            Effect.map(
              json(`${serve.baseUrl}/v1/executions/${id}`, { headers: { ...headers, ...extra } }),
              (r) => r.data
            )
          /** The columns of the execution's line in `appexec executions list`. */
          const listed = Effect.map(appexec(env, "executions", "list", "--data", dataDir), (out) => {
            expect(out.code).toBe(0)
            return out.stdout.split("\n").find((line) => line.startsWith(`${id}\t`))?.split("\t")
          })
          expect(yield* poll()).toMatchObject({ status: "queued", attempt: 0 })
          expect(yield* listed).toMatchObject({ 1: "queued", 6: "0" })

          /** `appexec worker` on the instance's database, with a 2 s lease; once it runs. */
          const worker = Effect.tap(
            spawnAppexec(["worker", "--data", dataDir, "--lease", "2s"], env),
            (w) => w.waitFor(/appexec worker is running/, "stderr", "20 seconds")
          )
          // The first worker takes it up and is killed in the middle of its 4 s pause.
          const first = yield* worker
          const running = yield* poll().pipe(
            Effect.filterOrFail((seen) => seen.status === "running", () => new Error(`${id} is not running`)),
            Effect.retry(Schedule.spaced("20 millis")),
            Effect.timeoutFail({ duration: "10 seconds", onTimeout: () => new Error(`${id} did not start running`) })
          )
          expect(running).toMatchObject({ attempt: 1 })
          first.child.kill("SIGKILL")
          yield* first.exited("10 seconds")

          // The next worker takes it over once the 2 s lease has run out, and runs it to its end.
          const second = yield* worker
          const done = yield* poll({ prefer: "wait=20" }).pipe(
            Effect.filterOrFail(
              (seen) => seen.status === "completed" || seen.status === "failed",
              () => new Error(`${id} has not finished`)
            ),
            Effect.retry(Schedule.recurs(3))
          )
          expect(done).toMatchObject({ status: "completed", attempt: 2 })
          const warning = second.output.stderr.split("\n").map((line) => line.trim()).filter((line) =>
            line.startsWith("{")
          ).map((line) => JSON.parse(line) as { message: string; level: string }).find((line) =>
            line.message === `execution ${id} reclaimed after lost lease (attempt 2)`
          )
          expect(warning?.level).toBe("warn")
          expect(yield* listed).toMatchObject({ 1: "completed", 6: "2" })
        }),
      90_000
    )
  }
})
