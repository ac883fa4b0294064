/**
 * The metrics of a fleet as processes on real sockets, on SQLite and on PostgreSQL: `appexec serve
 * --no-worker` and `appexec worker`, each with `--admin-port`, on one database. The API process
 * exports the gauges read from the database (`scope="database"`: queue depth, running, the oldest
 * queued age) and the worker does not, so a sum over both processes counts the queue once; both
 * export their own HTTP latency, process and runtime metrics, `appexec_build_info` with the
 * package's version, and on PostgreSQL their pool's connections.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect, Schedule } from "effect"
import { readFileSync } from "node:fs"
import * as Backends from "./support/Backends.js"
import { delayApps, json } from "./support/DelayApps.js"
import { spawnAppexec, startServe, tempDataDir } from "./support/ServeProcess.js"

const version = (JSON.parse(readFileSync(new URL("../package.json", import.meta.url), "utf8")) as { version: string })
  .version

/** One sample of a Prometheus exposition. */
interface Sample {
  readonly name: string
  readonly labels: Readonly<Record<string, string>>
  readonly value: number
}

/** The samples of the exposition at `url` (its `/metrics`). */
const scrape = (url: string) =>
  Effect.promise(async () => {
    const response = await fetch(url)
    expect(response.status).toBe(200)
    const samples: Array<Sample> = []
    for (const line of (await response.text()).split("\n")) {
      if (line === "" || line.startsWith("#")) continue
      const match = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/.exec(line)
      expect(match, line).not.toBeNull()
      const labels: Record<string, string> = {}
      for (const [, key, value] of (match![2] ?? "").matchAll(/([a-zA-Z_]\w*)="((?:[^"\\]|\\.)*)"/g)) {
        labels[key!] = value!
      }
      samples.push({ name: match![1]!, labels, value: match![3] === "+Inf" ? Infinity : Number(match![3]) })
    }
    return samples
  })

/** The samples named `name` whose labels include `labels`. */
const series = (samples: ReadonlyArray<Sample>, name: string, labels: Record<string, string> = {}) =>
  samples.filter((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v))

/** The one value of `name` with `labels`; undefined when the process does not export it. */
const valueOf = (samples: ReadonlyArray<Sample>, name: string, labels: Record<string, string> = {}) =>
  series(samples, name, labels)[0]?.value

/** The sum of `name` over the processes' expositions, as `sum(name)` over their series would be. */
const sumOver = (processes: ReadonlyArray<ReadonlyArray<Sample>>, name: string) =>
  processes.flatMap((samples) => series(samples, name)).reduce((total, s) => total + s.value, 0)

const METRICS_URL = /Metrics: (http:\/\/127\.0\.0\.1:\d+\/metrics)/

describe.each([Backends.sqlite, Backends.postgres])("metrics of a fleet on $name", (backend) => {
  it.scopedLive(
    "the API exports the database's gauges once, the worker its own; latency, process, runtime and build info on both",
    () =>
      Effect.gen(function*() {
        const env = yield* backend.env
        const dataDir = yield* tempDataDir
        const serve = yield* startServe(
          dataDir,
          ["--apps", yield* delayApps({ name: "Pause", ms: 60_000 }), "--no-worker", "--admin-port", "0"],
          env
        )
        const apiMetrics = (yield* serve.waitFor(METRICS_URL, "stderr"))[1]!
        const headers = { "x-api-key": serve.key, "content-type": "application/json" }
        const apps = yield* json(`${serve.baseUrl}/v1/apps?search=Pause`, { headers })
        const appId = String((apps.data as unknown as Array<{ appId: string }>)[0]!.appId)
        for (let i = 0; i < 3; i++) {
          const started = yield* json(`${serve.baseUrl}/v1/apps/${appId}/executions`, {
            method: "POST",
            headers,
            body: JSON.stringify({ inputs: { prompt: "x" } })
          })
          expect(started.status).toBe(202)
        }

        const queued = yield* scrape(apiMetrics)
        expect(valueOf(queued, "appexec_queue_depth", { scope: "database" })).toBe(3)
        const age = valueOf(queued, "appexec_queue_oldest_age_seconds", { scope: "database" })!
        expect(age).toBeGreaterThan(0)
        expect(age).toBeLessThan(60)
        const route = { route: "/v1/apps/:appId/executions", status: "202" }
        expect(valueOf(queued, "appexec_http_request_duration_seconds_count", route)).toBe(3)
        expect(valueOf(queued, "appexec_http_requests_total", route)).toBe(3)
        expect(valueOf(queued, "appexec_http_request_duration_seconds_sum", route)).toBeGreaterThan(0)
        expect(valueOf(queued, "appexec_build_info", { version, node: process.versions.node })).toBe(1)
        expect(valueOf(queued, "process_resident_memory_bytes")).toBeGreaterThan(10_000_000)
        expect(valueOf(queued, "process_cpu_seconds_total")).toBeGreaterThan(0)
        expect(valueOf(queued, "nodejs_eventloop_lag_p99_seconds")).toBeGreaterThanOrEqual(0)

        const worker = yield* spawnAppexec(
          ["worker", "--data", dataDir, "--concurrency", "1", "--admin-port", "0"],
          env
        )
        const workerMetrics = (yield* worker.waitFor(METRICS_URL, "stderr"))[1]!
        // The worker takes one execution (its one slot) and leaves two queued.
        const taken = yield* scrape(apiMetrics).pipe(
          Effect.filterOrFail(
            (samples) => valueOf(samples, "appexec_executions_running", { scope: "database" }) === 1,
            () => new Error("the worker took nothing")
          ),
          Effect.retry(Schedule.spaced("50 millis")),
          Effect.timeoutFail({ duration: "20 seconds", onTimeout: () => new Error("no execution started running") })
        )
        const fromWorker = yield* scrape(workerMetrics)
        // The database's gauges come from the API process alone: a sum over the fleet counts each once.
        expect(series(fromWorker, "appexec_queue_depth")).toEqual([])
        expect(series(fromWorker, "appexec_executions_running")).toEqual([])
        expect(series(fromWorker, "appexec_queue_oldest_age_seconds")).toEqual([])
        expect(sumOver([taken, fromWorker], "appexec_queue_depth")).toBe(2)
        expect(sumOver([taken, fromWorker], "appexec_executions_running")).toBe(1)
        // What is the worker's own: its build, process and runtime, its reclaims (none).
        expect(valueOf(fromWorker, "appexec_build_info", { version })).toBe(1)
        expect(valueOf(fromWorker, "process_resident_memory_bytes")).toBeGreaterThan(10_000_000)
        expect(valueOf(fromWorker, "process_start_time_seconds")).toBeGreaterThan(Date.now() / 1000 - 120)
        expect(valueOf(fromWorker, "appexec_executions_reclaimed_total")).toBe(0)

        for (const samples of [taken, fromWorker]) {
          const pool = series(samples, "appexec_db_pool_max")
          if (backend.name === "sqlite") {
            // SQLite has one connection a process and no pool.
            expect(pool).toEqual([])
          } else {
            const max = pool[0]!.value
            const inUse = valueOf(samples, "appexec_db_pool_connections", { state: "in_use" })!
            const idle = valueOf(samples, "appexec_db_pool_connections", { state: "idle" })!
            expect(max).toBeGreaterThan(0)
            expect(inUse + idle).toBeGreaterThan(0)
            expect(inUse + idle).toBeLessThanOrEqual(max)
            expect(valueOf(samples, "appexec_db_pool_waiting")).toBe(0)
          }
        }
      }),
    120_000
  )
})
