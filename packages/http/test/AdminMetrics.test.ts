/**
 * The admin app's `/metrics` over real sockets, parsed as Prometheus text: the request latency
 * histogram beside the request count, by route template (never the raw path) and status, rising
 * with requests to the API app; the process's and runtime's metrics under prom-client's names
 * (`NodeProcessMetrics`), with sane values; `appexec_build_info`; and a worker's exposition
 * (`databaseGauges: false`) without the database's gauges.
 */
import { AppexecMetrics } from "@appexec/core"
import { AdminHttp } from "@appexec/http"
import { NodeListener, NodeProcessMetrics } from "@appexec/platform-node"
import { TestHttpServer } from "@appexec/testing"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { get, stack } from "./fixtures.js"

/** One sample of the exposition: its name, labels and value. */
interface Sample {
  readonly name: string
  readonly labels: Readonly<Record<string, string>>
  readonly value: number
}

const SAMPLE = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/
const LABEL = /([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g

/** The exposition's samples and declared types; a line that is neither a comment nor a sample fails the test. */
const parse = (text: string) => {
  const samples: Array<Sample> = []
  const types = new Map<string, string>()
  for (const line of text.split("\n")) {
    if (line === "") continue
    const type = /^# TYPE (\S+) (counter|gauge|histogram|untyped)$/.exec(line)
    if (type !== null) {
      expect(types.has(type[1]!), `one TYPE for ${type[1]}`).toBe(false)
      types.set(type[1]!, type[2]!)
      continue
    }
    if (line.startsWith("# HELP ")) continue
    const match = SAMPLE.exec(line)
    expect(match, line).not.toBeNull()
    const labels: Record<string, string> = {}
    for (const [, key, value] of (match![2] ?? "").matchAll(LABEL)) labels[key!] = value!
    const value = match![3] === "+Inf" ? Infinity : Number(match![3])
    expect(Number.isNaN(value), line).toBe(false)
    samples.push({ name: match![1]!, labels, value })
  }
  return { samples, types }
}

/** The value of the sample `name` whose labels include `labels`; undefined when there is none. */
const find = (samples: ReadonlyArray<Sample>, name: string, labels: Record<string, string> = {}) =>
  samples.find((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v))?.value

/** The admin app of the context, on a socket of its own, with the process's metrics; its `/metrics` text. */
const serveAdmin = (options: AdminHttp.MetricsOptions) =>
  Effect.gen(function*() {
    const processMetrics = yield* Layer.build(NodeProcessMetrics.layer)
    const { origin, server } = yield* TestHttpServer.listening
    const app = yield* AdminHttp.makeWith(options).pipe(Effect.provide(processMetrics))
    server.on("request", NodeListener.fromApp(app))
    return Effect.promise(async () => {
      const response = await fetch(`${origin}/metrics`)
      expect(response.status).toBe(200)
      return parse(await response.text())
    })
  })

const ROUTE = "/v1/executions/:executionId"
const UNKNOWN = "00000000-0000-4000-8000-000000000000"

describe("admin metrics", () => {
  it.scoped("request latency by route and status beside the count; process, runtime and build metrics", () =>
    Effect.gen(function*() {
      yield* AppexecMetrics.recordBuildInfo({ version: "9.8.7", node: process.versions.node })
      const scrape = yield* serveAdmin({})
      const labels = { route: ROUTE, status: "401" }
      const before = yield* scrape
      const countBefore = find(before.samples, "appexec_http_request_duration_seconds_count", labels) ?? 0
      for (let i = 0; i < 3; i++) expect((yield* get(`/v1/executions/${UNKNOWN}`)).status).toBe(401)
      const { samples, types } = yield* scrape

      expect(types.get("appexec_http_request_duration_seconds")).toBe("histogram")
      expect(types.get("appexec_http_requests_total")).toBe("counter")
      const count = find(samples, "appexec_http_request_duration_seconds_count", labels)!
      expect(count).toBe(countBefore + 3)
      expect(find(samples, "appexec_http_requests_total", labels)).toBe(count)
      const sum = find(samples, "appexec_http_request_duration_seconds_sum", labels)!
      expect(sum).toBeGreaterThan(0)
      expect(sum).toBeLessThan(count * 5)
      // Buckets are cumulative and end with +Inf at the count.
      const buckets = samples.filter((s) =>
        s.name === "appexec_http_request_duration_seconds_bucket" && s.labels.route === ROUTE &&
        s.labels.status === "401"
      )
      expect(buckets.length).toBeGreaterThan(10)
      buckets.slice(1).forEach((b, i) => expect(b.value).toBeGreaterThanOrEqual(buckets[i]!.value))
      expect(buckets.at(-1)).toMatchObject({ labels: { le: "+Inf" }, value: count })
      // The route is the template: no raw path becomes a label.
      expect(samples.some((s) => Object.values(s.labels).some((v) => v.includes(UNKNOWN)))).toBe(false)

      expect(find(samples, "appexec_build_info", { version: "9.8.7", node: process.versions.node })).toBe(1)
      expect(types.get("process_cpu_seconds_total")).toBe("counter")
      expect(find(samples, "process_cpu_seconds_total")).toBeGreaterThan(0)
      expect(find(samples, "process_resident_memory_bytes")).toBeGreaterThan(10_000_000)
      const start = find(samples, "process_start_time_seconds")!
      const now = Date.now() / 1000
      expect(start).toBeLessThanOrEqual(now)
      expect(start).toBeGreaterThan(now - process.uptime() - 5)
      expect(find(samples, "nodejs_heap_size_used_bytes")).toBeGreaterThan(1_000_000)
      expect(find(samples, "nodejs_heap_size_total_bytes")).toBeGreaterThanOrEqual(
        find(samples, "nodejs_heap_size_used_bytes")!
      )
      expect(find(samples, "process_open_fds")).toBeGreaterThan(2)
      expect(find(samples, "nodejs_active_resources_total")).toBeGreaterThan(0)
      expect(find(samples, "nodejs_version_info", { version: `v${process.versions.node}` })).toBe(1)
      // The monitor's window since the previous scrape may hold no sample yet (it samples every 10 ms).
      const p99 = find(samples, "nodejs_eventloop_lag_p99_seconds")!
      expect(p99).toBeGreaterThanOrEqual(0)
      expect(p99).toBeLessThan(5)
      const lag = find(samples, "nodejs_eventloop_lag_seconds")!
      expect(lag).toBeGreaterThan(0)
      expect(lag).toBeLessThan(5)
      // The database's gauges, read from storage, labelled as such.
      expect(find(samples, "appexec_queue_depth", { scope: "database" })).toBe(0)
      expect(find(samples, "appexec_queue_oldest_age_seconds", { scope: "database" })).toBe(0)
    }).pipe(Effect.provide(stack())))

  it.scoped("a worker's admin port leaves out the gauges read from the database", () =>
    Effect.gen(function*() {
      const { samples, types } = yield* Effect.flatten(serveAdmin({ databaseGauges: false }))
      for (const name of ["appexec_queue_depth", "appexec_executions_running", "appexec_queue_oldest_age_seconds"]) {
        expect(types.has(name), name).toBe(false)
        expect(samples.some((s) => s.name === name), name).toBe(false)
      }
      expect(types.get("appexec_executions_reclaimed_total")).toBe("counter")
      expect(find(samples, "process_resident_memory_bytes")).toBeGreaterThan(0)
    }).pipe(Effect.provide(stack())))
})
