/**
 * The metrics: what the engine counts (started, finished by status, run time, webhook attempts by
 * outcome, takeovers of a lost worker's execution), gauges read from storage (the oldest queued
 * age among them, only where the database's gauges are asked for), and the Prometheus text they
 * render to.
 */
import { Appexec, AppexecMetrics, ExecutionQueue, OutboundHttp } from "@appexec/core"
import { TestHarness } from "@appexec/testing"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Fiber, Layer, Metric, MetricBoundaries, Option, TestClock } from "effect"
import * as Worker from "../src/internal/engine/Worker.js"

/** A receiver that answers every webhook 200. */
const accepting = Layer.succeed(OutboundHttp.OutboundHttp, {
  request: () => Effect.succeed({ status: 200, headers: {}, body: new Uint8Array() })
})

const slow = {
  name: "Slow",
  public: true,
  nodes: [
    { id: "wait", type: "util.delay", config: { ms: 1500 } },
    { id: "result", type: "output.text", label: "Result" }
  ],
  edges: [{ source: "wait", target: "result" }]
}

/** The value of the series `line` starts with (name and labels) in `text`. */
const valueOf = (text: string, series: string) => {
  const line = text.split("\n").find((l) => l.startsWith(`${series} `))
  return line === undefined ? undefined : Number(line.slice(series.length + 1))
}

describe("metrics", () => {
  it.scoped("count accepted and finished executions, their run time, the queue, and webhook outcomes", () =>
    Effect.gen(function*() {
      const appexec = yield* Appexec.Appexec
      const app = yield* appexec.apps.import(slow)
      const principal = yield* TestHarness.signIn()
      const before = yield* AppexecMetrics.prometheus
      const started = valueOf(before, "appexec_executions_started_total")!
      const completed = valueOf(before, "appexec_executions_finished_total{status=\"completed\"}")!
      const durations = valueOf(before, "appexec_execution_duration_seconds_bucket{le=\"2.5\"}")!
      const slowOnes = valueOf(before, "appexec_execution_duration_seconds_bucket{le=\"1\"}")!
      const delivered = valueOf(before, "appexec_webhook_deliveries_total{outcome=\"delivered\"}")!
      expect(before).toContain("# TYPE appexec_execution_duration_seconds histogram")
      expect(before).toContain("# TYPE appexec_executions_started_total counter")

      const one = yield* appexec.executions.start(principal, app.appId, {}, { webhook: "https://example.com/hook" })
      yield* appexec.executions.start(principal, app.appId, {})
      const queuedNow = yield* AppexecMetrics.prometheus
      expect(valueOf(queuedNow, "appexec_executions_started_total")).toBe(started + 2)
      expect(
        valueOf(queuedNow, "appexec_queue_depth{scope=\"database\"}")! +
          valueOf(queuedNow, "appexec_executions_running{scope=\"database\"}")!
      ).toBe(2)

      const waiting = yield* Effect.fork(appexec.executions.await(one.executionId))
      yield* TestClock.adjust("2 seconds")
      yield* Fiber.join(waiting)
      yield* TestClock.adjust("2 seconds")
      const after = yield* AppexecMetrics.prometheus
      expect(valueOf(after, "appexec_executions_finished_total{status=\"completed\"}")).toBe(completed + 2)
      expect(valueOf(after, "appexec_execution_duration_seconds_bucket{le=\"2.5\"}")).toBe(durations + 2)
      expect(valueOf(after, "appexec_execution_duration_seconds_bucket{le=\"1\"}")).toBe(slowOnes)
      expect(valueOf(after, "appexec_queue_depth{scope=\"database\"}")).toBe(0)
      expect(valueOf(after, "appexec_executions_running{scope=\"database\"}")).toBe(0)
      expect(valueOf(after, "appexec_webhook_deliveries_total{outcome=\"delivered\"}")).toBe(delivered + 1)
    }).pipe(
      Effect.provide(
        TestHarness.layer({ webhooks: true, outbound: accepting })
      )
    ))

  it.scoped("the oldest queued execution's age grows with the clock; the database's gauges only where asked", () =>
    Effect.gen(function*() {
      const appexec = yield* Appexec.Appexec
      const app = yield* appexec.apps.import(slow)
      const principal = yield* TestHarness.signIn()
      const oldest = "appexec_queue_oldest_age_seconds{scope=\"database\"}"
      expect(valueOf(yield* AppexecMetrics.prometheus, oldest)).toBe(0)
      yield* appexec.executions.start(principal, app.appId, {})
      yield* TestClock.adjust("90 seconds")
      yield* appexec.executions.start(principal, app.appId, {})
      yield* TestClock.adjust("30 seconds")
      const text = yield* AppexecMetrics.prometheus
      expect(valueOf(text, oldest)).toBe(120)
      expect(valueOf(text, "appexec_queue_depth{scope=\"database\"}")).toBe(2)
      expect(text).toContain("# TYPE appexec_queue_oldest_age_seconds gauge")
      // A worker's exposition leaves the database's gauges to the API processes.
      const worker = yield* AppexecMetrics.prometheusOf({ database: false })
      expect(worker).not.toContain("appexec_queue_depth")
      expect(worker).not.toContain("appexec_queue_oldest_age_seconds")
      expect(worker).not.toContain("appexec_executions_running")
      expect(worker).toContain("appexec_executions_started_total")
    }).pipe(Effect.provide(TestHarness.layer({ worker: false }))))

  it.scoped("counts a run that takes over an execution whose worker was lost with its lease", () =>
    Effect.gen(function*() {
      const appexec = yield* Appexec.Appexec
      const queue = yield* ExecutionQueue.ExecutionQueue
      const app = yield* appexec.apps.import(slow)
      const principal = yield* TestHarness.signIn()
      const reclaimed = "appexec_executions_reclaimed_total"
      const before = valueOf(yield* AppexecMetrics.prometheus, reclaimed)!
      const first = yield* appexec.executions.start(principal, app.appId, {})
      // A worker claims it and is lost: no renewal, no result.
      Option.getOrThrow(yield* ExecutionQueue.claimOne(queue, "lost-worker", 30_000))
      yield* Effect.forkScoped(Worker.run.pipe(Effect.zipRight(Effect.never)))
      // An execution the live worker runs first time is no takeover.
      const second = yield* appexec.executions.start(principal, app.appId, {})
      const secondDone = yield* Effect.fork(appexec.executions.await(second.executionId))
      yield* TestClock.adjust("2 seconds")
      expect(yield* Fiber.join(secondDone)).toMatchObject({ status: "completed", attempt: 1 })
      expect(valueOf(yield* AppexecMetrics.prometheus, reclaimed)).toBe(before)
      // The lost lease runs out: the worker takes the execution over.
      const firstDone = yield* Effect.fork(appexec.executions.await(first.executionId))
      yield* TestClock.adjust("31 seconds")
      expect(yield* Fiber.join(firstDone)).toMatchObject({ status: "completed", attempt: 2 })
      expect(valueOf(yield* AppexecMetrics.prometheus, reclaimed)).toBe(before + 1)
    }).pipe(Effect.provide(TestHarness.layer({ worker: false }))))

  it("renders counters, gauges and histograms in the Prometheus text format", () => {
    const counter = Metric.counter("appexec_test_total", { description: "A test counter." })
    const gauge = Metric.gauge("appexec_test_gauge")
    const histogram = Metric.histogram("appexec_test_seconds", MetricBoundaries.fromIterable([0.5, 1]))
    Effect.runSync(
      Effect.all([
        Metric.incrementBy(Metric.tagged(counter, "status", "a\"b"), 2),
        Metric.set(gauge, 7),
        Metric.update(histogram, 0.2),
        Metric.update(histogram, 0.7),
        Metric.update(histogram, 3)
      ])
    )
    const text = AppexecMetrics.renderPrometheus(Effect.runSync(Metric.snapshot))
    const section = (name: string) => text.split("\n").filter((l) => l.includes(name)).join("\n")
    expect(section("appexec_test_total")).toBe(
      "# HELP appexec_test_total A test counter.\n# TYPE appexec_test_total counter\nappexec_test_total{status=\"a\\\"b\"} 2"
    )
    expect(section("appexec_test_gauge")).toBe("# TYPE appexec_test_gauge gauge\nappexec_test_gauge 7")
    expect(section("appexec_test_seconds")).toBe(
      [
        "# TYPE appexec_test_seconds histogram",
        "appexec_test_seconds_bucket{le=\"0.5\"} 1",
        "appexec_test_seconds_bucket{le=\"1\"} 2",
        "appexec_test_seconds_bucket{le=\"+Inf\"} 3",
        "appexec_test_seconds_sum 3.9",
        "appexec_test_seconds_count 3"
      ].join("\n")
    )
  })
})
