/**
 * The fleet as an operator sees it (docs/operations.md#the-fleet), with the compiled command:
 * `serve --no-worker --name api-1 --admin-port 0` and two `worker --name …` on one database. The
 * admin port lists the three with their roles, idle workers too; the running execution's detail
 * and `appexec executions list` name the worker holding it, and its log lines carry
 * `process=NAME`. The worker stopped with SIGTERM leaves the list at once, and its execution,
 * handed back, is taken up by the other, which logs it at info level; the worker killed with
 * SIGKILL shows as lost once its 2 s lease has passed. On SQLite and on PostgreSQL.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { execFile } from "node:child_process"
import { backends } from "./support/Backends.js"
import { bin } from "./support/Bin.js"
import { json, slowApps } from "./support/DelayApps.js"
import { spawnAppexec, startServe, tempDataDir } from "./support/ServeProcess.js"

/** Runs `appexec …args` with `env` added to the environment to completion: its stdout and exit code. */
const appexec = (env: Record<string, string>, ...args: Array<string>) =>
  Effect.async<{ stdout: string; code: number }>((resume) => {
    execFile(
      process.execPath,
      [bin, ...args],
      { env: { ...process.env, ...env } },
      (error, stdout) => resume(Effect.succeed({ stdout, code: error === null ? 0 : Number(error.code ?? 1) }))
    )
  })

/** A process as `GET /operator/processes` lists it. */
interface Listed {
  readonly processId: string
  readonly name: string
  readonly role: string
  readonly version: string
  readonly live: boolean
  readonly running: number
}

/** Reads `read` every 50 ms until `done` holds of it (at most `within` ms); the last answer. */
const until = <A>(what: string, read: Effect.Effect<A>, done: (a: A) => boolean, within = 20_000) =>
  Effect.gen(function*() {
    const deadline = Date.now() + within
    for (;;) {
      const seen = yield* read
      if (done(seen)) return seen
      if (Date.now() > deadline) {
        return yield* Effect.dieMessage(`${what}: not within ${within} ms (${JSON.stringify(seen)})`)
      }
      yield* Effect.sleep("50 millis")
    }
  })

describe("the fleet in the operator views", () => {
  for (const backend of backends) {
    it.scopedLive(
      `serve --no-worker and two named workers: listed with their roles, a stop leaves at once, a kill after its lease, on ${backend.name}`,
      () =>
        Effect.gen(function*() {
          const dataDir = yield* tempDataDir
          const env = yield* backend.env
          const serve = yield* startServe(
            dataDir,
            ["--apps", yield* slowApps, "--no-worker", "--name", "api-1", "--admin-port", "0"],
            env
          )
          const [, adminUrl] = yield* serve.waitFor(/Operator views: (http:\/\/127\.0\.0\.1:\d+)\/console/, "stderr")
          const worker = (name: string) =>
            Effect.tap(
              spawnAppexec(
                ["worker", "--data", dataDir, "--name", name, "--lease", "2s", "--drain-timeout", "1s"],
                env
              ),
              (w) => w.waitFor(/appexec worker is running/, "stderr", "20 seconds")
            )
          const workers = { "worker-a": yield* worker("worker-a"), "worker-b": yield* worker("worker-b") }
          const processes = Effect.map(json<Array<Listed>>(`${adminUrl}/operator/processes`), (r) => r.data)
          const live = (list: ReadonlyArray<Listed>) => list.filter((p) => p.live).map((p) => p.name)

          // All three, idle: the API and both workers, each with its role and version.
          const three = yield* until("the three processes", processes, (list) => live(list).length === 3)
          expect(three.map(({ live, name, role, running, version }) => ({ name, role, version, live, running })))
            .toEqual([
              { name: "api-1", role: "api", version: "0.1.0", live: true, running: 0 },
              { name: "worker-a", role: "worker", version: "0.1.0", live: true, running: 0 },
              { name: "worker-b", role: "worker", version: "0.1.0", live: true, running: 0 }
            ])
          for (const p of three) expect(p.processId).toMatch(new RegExp(`^${p.name}#[0-9a-f]{6}$`))

          // One execution: the worker that runs it is named by its detail, the listing and its logs.
          const headers = { "x-api-key": serve.key, "content-type": "application/json" }
          const [app] =
            (yield* json<Array<{ appId: string }>>(`${serve.baseUrl}/v1/apps?search=Slow`, { headers })).data
          const started = yield* json<{ executionId: string }>(`${serve.baseUrl}/v1/apps/${app!.appId}/executions`, {
            method: "POST",
            headers,
            body: JSON.stringify({ inputs: { prompt: "x" } })
          })
          const id = started.data.executionId
          type Detail = { status: string; attempt: number; worker: { processId: string; name: string } | null }
          const detail = Effect.map(json<Detail>(`${adminUrl}/operator/executions/${id}`), (r) => r.data)
          const first = (yield* until("a worker runs it", detail, (d) => d.worker !== null)).worker!
          const holder = first.name as keyof typeof workers
          const other = holder === "worker-a" ? "worker-b" : "worker-a"
          expect(yield* processes).toEqual(
            expect.arrayContaining([expect.objectContaining({ name: holder, running: 1 })])
          )
          // The API's own answer never names a worker.
          const polled = yield* json<Record<string, unknown>>(`${serve.baseUrl}/v1/executions/${id}`, { headers })
          expect(polled.data).not.toHaveProperty("worker")
          const listed = yield* appexec(env, "executions", "list", "--data", dataDir)
          expect(listed.code).toBe(0)
          const columns = listed.stdout.split("\n").find((line) => line.startsWith(`${id}\t`))!.split("\t")
          expect(columns[1]).toBe("running")
          expect(columns[7]).toBe(first.processId)
          yield* workers[holder].waitFor(new RegExp(`"process":"${holder}"`), "stderr")

          // SIGTERM: the worker hands its execution back and is gone from the list as it exits.
          workers[holder].child.kill("SIGTERM")
          yield* workers[holder].exited("20 seconds")
          expect((yield* processes).map((p) => p.name)).toEqual(["api-1", other])
          // The other takes it up and says so, naming itself.
          const taken = yield* until("the other worker takes it up", detail, (d) => d.worker?.name === other)
          expect(taken.attempt).toBe(2)
          const [line] = yield* workers[other].waitFor(
            /[^\n]*runs again after its worker handed it back \(attempt 2\)[^\n]*/,
            "stderr"
          )
          expect(line).toContain(`"process":"${other}"`)
          expect(line).toContain(id)

          // SIGKILL: still listed live until its 2 s lease has passed without a heartbeat, then lost.
          workers[other].child.kill("SIGKILL")
          yield* workers[other].exited("10 seconds")
          const killedAt = Date.now()
          const after = yield* until("the killed worker is lost", processes, (list) => live(list).length === 1, 10_000)
          const lostAfter = Date.now() - killedAt
          expect(lostAfter).toBeLessThan(4_000)
          expect(after).toEqual([
            expect.objectContaining({ name: "api-1", live: true }),
            expect.objectContaining({ name: other, live: false })
          ])
          yield* Effect.logInfo(`the killed worker was shown lost ${lostAfter} ms after the kill (lease 2 s)`)
        }),
      120_000
    )
  }
})
