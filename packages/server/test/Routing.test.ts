/**
 * Capacity and routing over real processes (docs/scaling.md#pools), on SQLite and on PostgreSQL:
 * - head-of-line: a worker of the `util.*` pool busy with 20 long runs, and a worker for the rest
 *   (`input.*,output.*,text.*`): text runs started meanwhile finish within a second each;
 * - an execution no running worker can run says what it waits for (`waitingFor`), and runs as
 *   soon as such a worker starts;
 * - a killed worker's runs are taken over only by a worker that runs their node types;
 * - an app's `concurrency` of 2 holds across 4 worker processes: sampled every 50 ms through
 *   `GET /v1/executions`, never more than 2 run at once; a workspace's own cap of 1 holds across 2;
 *   the executions they hold back say so (`waitingFor`).
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { backends } from "./support/Backends.js"
import { json } from "./support/DelayApps.js"
import { spawnAppexec, startServe, tempDataDir } from "./support/ServeProcess.js"

const app = (name: string, middle: Record<string, unknown>, extra: Record<string, unknown> = {}) => ({
  name,
  public: true,
  ...extra,
  nodes: [
    { id: "prompt", type: "input.text", config: { name: "prompt" } },
    { id: "middle", ...middle },
    { id: "out", type: "output.text", label: "Out" }
  ],
  edges: [{ source: "prompt", target: "middle" }, { source: "middle", target: "out" }]
})

/** Heavy (10 minutes in `util.delay`), Echo (`text.template` only), Limited (`concurrency` 2, 400 ms), Paced (300 ms). */
const apps = Effect.acquireRelease(
  Effect.sync(() => {
    const dir = mkdtempSync(join(tmpdir(), "appexec-routing-"))
    const write = (file: string, definition: unknown) => writeFileSync(join(dir, file), JSON.stringify(definition))
    write("heavy.json", app("Heavy", { type: "util.delay", config: { ms: 600_000 } }, { timeoutSeconds: 3600 }))
    write("echo.json", app("Echo", { type: "text.template", config: { template: "echo {{prompt}}" } }))
    write("limited.json", app("Limited", { type: "util.delay", config: { ms: 400 } }, { concurrency: 2 }))
    write("paced.json", app("Paced", { type: "util.delay", config: { ms: 300 } }))
    return dir
  }),
  (dir) => Effect.sync(() => rmSync(dir, { recursive: true, force: true }))
)

interface Polled {
  readonly executionId: string
  readonly status: string
  readonly attempt: number
  readonly createdAt: string
  readonly startedAt: string | null
  readonly completedAt: string | null
  readonly waitingFor?: string
}

/**
 * The most runs that ran at once, from their own start and end times (each run between them held
 * its lease, so what a cap bounds): a sweep over the starts and ends, an end before a start at the
 * same millisecond.
 */
const mostAtOnce = (runs: ReadonlyArray<Polled>) => {
  const edges = runs.flatMap((p) => [
    { at: Date.parse(p.startedAt!), step: 1 },
    { at: Date.parse(p.completedAt!), step: -1 }
  ]).sort((a, b) => a.at - b.at || a.step - b.step)
  let now = 0
  let most = 0
  for (const edge of edges) most = Math.max(most, now += edge.step)
  return most
}

/** Adds to `reasons` what the queued executions among `polled` say they wait for; `polled` as it is. */
const reasonsOf = (polled: ReadonlyArray<Polled>, reasons: Set<string>) => {
  for (const p of polled) if (p.status === "queued" && p.waitingFor !== undefined) reasons.add(p.waitingFor)
  return polled
}

/** Reads `read` every 50 ms until `done` holds of it (at most `within` ms); the last answer. */
const until = <A>(what: string, read: Effect.Effect<A>, done: (a: A) => boolean, within = 30_000) =>
  Effect.gen(function*() {
    const deadline = Date.now() + within
    for (;;) {
      const seen = yield* read
      if (done(seen)) return seen
      if (Date.now() > deadline) return yield* Effect.dieMessage(`${what}: not within ${within} ms`)
      yield* Effect.sleep("50 millis")
    }
  })

/** The API of a `serve --no-worker` over `apps`, and what the tests call on it. */
const api = (dataDir: string, env: Record<string, string>) =>
  Effect.gen(function*() {
    const serve = yield* startServe(dataDir, ["--apps", yield* apps, "--no-worker", "--rate-limit", "100000"], env)
    const headers = { "x-api-key": serve.key, "content-type": "application/json" }
    const listed = yield* json<Array<{ appId: string; name: string }>>(`${serve.baseUrl}/v1/apps`, { headers })
    const appId = (name: string) => listed.data.find((a) => a.name === name)!.appId
    const start = (name: string, prompt = "x", priority?: number) =>
      Effect.map(
        json<{ executionId: string }>(`${serve.baseUrl}/v1/apps/${appId(name)}/executions`, {
          method: "POST",
          headers,
          body: JSON.stringify({ inputs: { prompt }, ...(priority === undefined ? {} : { priority }) })
        }),
        (r) => r.data.executionId
      )
    const poll = (id: string) =>
      Effect.map(json<Polled>(`${serve.baseUrl}/v1/executions/${id}`, { headers }), (r) => r.data)
    const running = Effect.map(
      json<Array<Polled>>(`${serve.baseUrl}/v1/executions?status=running&limit=100`, { headers }),
      (r) => r.data
    )
    return { start, poll, running }
  })

/** Runs `appexec …args` on the database to its end. */
const admin = (dataDir: string, env: Record<string, string>, args: ReadonlyArray<string>) =>
  Effect.flatMap(spawnAppexec([...args, "--data", dataDir], env), (p) => p.exited("30 seconds"))

/** `appexec worker` on the database with `args`, once it runs. */
const worker = (dataDir: string, env: Record<string, string>, args: ReadonlyArray<string>) =>
  Effect.tap(
    spawnAppexec(["worker", "--data", dataDir, "--lease", "3s", "--drain-timeout", "1s", ...args], env),
    (w) => w.waitFor(/appexec worker is running/, "stderr", "30 seconds")
  )

describe("capacity and routing", () => {
  for (const backend of backends) {
    it.scopedLive(
      `heavy runs go to their pool, the rest never waits behind them, and a run no worker can take says why, on ${backend.name}`,
      () =>
        Effect.gen(function*() {
          const dataDir = yield* tempDataDir
          const env = yield* backend.env
          const { poll, start } = yield* api(dataDir, env)

          // No worker yet: the echo waits, and says for what.
          const early = yield* start("Echo")
          const waiting = yield* until(
            "the echo says what it waits for",
            poll(early),
            (p) => p.waitingFor !== undefined
          )
          expect(waiting.status).toBe("queued")
          expect(waiting.waitingFor).toMatch(/^a worker for .*text\.template/)

          // The heavy pool: it runs util.delay, not text.template; the echo still waits, for text.template alone.
          const heavy = yield* worker(dataDir, env, [
            "--name",
            "heavy",
            "--node-types",
            "util.*,input.*,output.*",
            "--concurrency",
            "20"
          ])
          const heavyRuns: Array<string> = []
          for (let i = 0; i < 20; i++) heavyRuns.push(yield* start("Heavy", `h${i}`))
          yield* until(
            "the echo waits for text.template alone",
            poll(early),
            (p) => p.waitingFor === "a worker for text.template"
          )
          expect((yield* poll(early)).status).toBe("queued")

          // The rest: as soon as its worker runs, the echo runs; and echoes started now finish within a second each.
          yield* worker(dataDir, env, ["--name", "light", "--node-types", "input.*,output.*,text.*"])
          const done = yield* until("the early echo ran", poll(early), (p) => p.status === "completed")
          expect(done.waitingFor).toBeUndefined()
          for (let i = 0; i < 5; i++) {
            const id = yield* start("Echo", `e${i}`)
            const finished = yield* until("an echo ran", poll(id), (p) => p.status === "completed", 10_000)
            expect(Date.parse(finished.completedAt!) - Date.parse(finished.createdAt)).toBeLessThan(1_000)
          }
          // Every heavy run is under way in the heavy pool meanwhile.
          const heavyNow = yield* Effect.forEach(heavyRuns, poll)
          expect(heavyNow.every((p) => p.status === "running" && p.attempt === 1)).toBe(true)

          // The heavy worker killed: its runs are not taken over by the light worker, even once their
          // leases ran out; a new heavy worker takes them over.
          heavy.child.kill("SIGKILL")
          yield* Effect.sleep("4 seconds")
          expect((yield* Effect.forEach(heavyRuns, poll)).every((p) => p.attempt === 1)).toBe(true)
          yield* worker(dataDir, env, [
            "--name",
            "heavy-2",
            "--node-types",
            "util.*,input.*,output.*",
            "--concurrency",
            "20"
          ])
          yield* until(
            "the new heavy worker took the runs over",
            Effect.forEach(heavyRuns, poll),
            (all) => all.every((p) => p.attempt === 2 && p.status === "running")
          )
        }),
      180_000
    )

    it.scopedLive(
      `priorities are claimed in order, FIFO within a priority, on ${backend.name}`,
      () =>
        Effect.gen(function*() {
          const dataDir = yield* tempDataDir
          const env = yield* backend.env
          const { poll, start } = yield* api(dataDir, env)
          const priorities = [0, 5, 0, 5, -3, 0, 5]
          const ids: Array<string> = []
          for (const [i, priority] of priorities.entries()) ids.push(yield* start("Paced", `p${i}`, priority))
          expect((yield* poll(ids[0]!)).status).toBe("queued")
          yield* worker(dataDir, env, ["--name", "one", "--concurrency", "1"])
          const done = yield* until(
            "the runs completed",
            Effect.forEach(ids, poll),
            (all) => all.every((p) => p.status === "completed"),
            60_000
          )
          const order = ids.map((id, i) => ({
            i,
            at: Date.parse(done.find((p) => p.executionId === id)!.completedAt!)
          }))
            .sort((a, b) => a.at - b.at).map(({ i }) => i)
          expect(order).toEqual([1, 3, 6, 0, 2, 5, 4])
        }),
      120_000
    )

    it.scopedLive(
      `a workspace's own cap holds across 2 worker processes, on ${backend.name}`,
      () =>
        Effect.gen(function*() {
          const dataDir = yield* tempDataDir
          const env = yield* backend.env
          const { poll, running, start } = yield* api(dataDir, env)
          expect((yield* admin(dataDir, env, ["workspaces", "set", "default", "--max-running", "1"])).code).toBe(0)
          for (let i = 0; i < 2; i++) yield* worker(dataDir, env, ["--name", `w${i}`, "--concurrency", "4"])
          const ids: Array<string> = []
          // Ten runs of 300 ms: the limit reasons are read afresh once a second (`WORKERS_TTL_MS`), so
          // some of those reads fall while one runs and others wait, even on a loaded machine.
          for (let i = 0; i < 10; i++) ids.push(yield* start("Paced", `c${i}`))
          let sampled = 0
          const reasons = new Set<string>()
          const done = yield* until(
            "the capped runs completed",
            Effect.gen(function*() {
              sampled = Math.max(sampled, (yield* running).length)
              return reasonsOf(yield* Effect.forEach(ids, poll), reasons)
            }),
            (all) => all.every((p) => p.status === "completed"),
            60_000
          )
          expect(sampled).toBeLessThanOrEqual(1)
          expect(mostAtOnce(done)).toBe(1)
          // A queued execution said what held it back.
          expect([...reasons]).toEqual(["the workspace's limit of 1 at once"])
        }),
      120_000
    )

    it.scopedLive(
      `an app's concurrency of 2 holds across 4 worker processes, on ${backend.name}`,
      () =>
        Effect.gen(function*() {
          const dataDir = yield* tempDataDir
          const env = yield* backend.env
          const { poll, running, start } = yield* api(dataDir, env)
          for (let i = 0; i < 4; i++) yield* worker(dataDir, env, ["--name", `w${i}`, "--concurrency", "4"])
          const ids: Array<string> = []
          // Sixteen runs of 400 ms, two at a time: several fresh reads of the limit reasons while two run.
          for (let i = 0; i < 16; i++) ids.push(yield* start("Limited", `l${i}`))
          let sampled = 0
          const reasons = new Set<string>()
          const done = yield* until(
            "the limited runs completed",
            Effect.gen(function*() {
              sampled = Math.max(sampled, (yield* running).length)
              return reasonsOf(yield* Effect.forEach(ids, poll), reasons)
            }),
            (all) => all.every((p) => p.status === "completed"),
            60_000
          )
          // Never more than 2 seen running; and from the runs' own times, 2 at once, never 3.
          expect(sampled).toBeLessThanOrEqual(2)
          expect(mostAtOnce(done)).toBe(2)
          expect([...reasons]).toEqual(["the app's limit of 2 at once"])
        }),
      180_000
    )
  }
})
