/**
 * The metrics of an appexec instance (docs/operations.md#metrics), as effect `Metric`s in the
 * process's metric registry, and their Prometheus text exposition. Counters and the histogram are
 * updated where things happen (facade, worker, webhook dispatcher, HTTP app); the gauges are read
 * from storage when the metrics are rendered, so they hold for every process on the database.
 */
import { Effect, Metric, MetricBoundaries, MetricKey, MetricLabel, type MetricPair, MetricState } from "effect"
import type { StorageError } from "./Errors.js"
import { ExecutionStore } from "./ExecutionStore.js"

/** Executions accepted (`POST /v1/apps/{appId}/executions`, `Appexec.executions.start`). */
export const executionsStarted = Metric.counter("appexec_executions_started_total", {
  description: "Executions accepted (queued)."
})

const executionsFinishedKey = MetricKey.counter("appexec_executions_finished_total", {
  description: "Executions finished, by status."
})

/** Executions finished, by `status` (`completed`, `failed`). */
export const executionsFinished = Metric.fromMetricKey(executionsFinishedKey)

/** Executions waiting for a worker. */
export const queueDepth = Metric.gauge("appexec_queue_depth", {
  description: "Executions queued, waiting for a worker."
})

/** Executions running now. */
export const executionsRunning = Metric.gauge("appexec_executions_running", {
  description: "Executions running now."
})

/** Seconds from start to end of a run. */
export const executionDuration = Metric.histogram(
  "appexec_execution_duration_seconds",
  MetricBoundaries.fromIterable([0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600]),
  "Run time of finished executions, from start to end, in seconds."
)

const webhookDeliveriesKey = MetricKey.counter("appexec_webhook_deliveries_total", {
  description: "Webhook delivery attempts, by outcome."
})

/** Webhook attempts, by `outcome`: `delivered`, `retrying` (failed, tried again later), `failed` (given up). */
export const webhookDeliveries = Metric.fromMetricKey(webhookDeliveriesKey)

/**
 * One series of a counter, looked up in the metric registry once, when this is called: a
 * `Metric.tagged` counter looks it up at every count. The same series as the counter tagged with
 * `labels` in their order.
 */
const seriesOf = (key: MetricKey.MetricKey.Counter<number>, ...labels: ReadonlyArray<readonly [string, string]>) =>
  Metric.fromMetricKey(MetricKey.taggedWithLabels(key, labels.map(([tag, value]) => MetricLabel.make(tag, value))))

/** The webhook attempt counter of one outcome. */
export const webhookOutcome = {
  delivered: seriesOf(webhookDeliveriesKey, ["outcome", "delivered"]),
  retrying: seriesOf(webhookDeliveriesKey, ["outcome", "retrying"]),
  failed: seriesOf(webhookDeliveriesKey, ["outcome", "failed"])
} as const

const httpRequestsKey = MetricKey.counter("appexec_http_requests_total", {
  description: "HTTP requests answered, by route and status."
})

/** HTTP requests answered, by `route` (path template) and `status`. */
export const httpRequests = Metric.fromMetricKey(httpRequestsKey)

/**
 * Counts requests of one `route` and `status` in `httpRequests`, synchronously, for a server that
 * answers many requests: the counter is looked up in the metric registry once, when this is
 * called, instead of at every count as a `Metric.tagged` counter is. The same series as
 * `httpRequests.pipe(Metric.tagged("route", route), Metric.tagged("status", status))`.
 */
export const httpRequestCounter = (route: string, status: string): () => void => {
  const counter = seriesOf(httpRequestsKey, ["route", route], ["status", status])
  return () => counter.unsafeUpdate(1, [])
}

const finishedCompleted = seriesOf(executionsFinishedKey, ["status", "completed"])
const finishedFailed = seriesOf(executionsFinishedKey, ["status", "failed"])
/** The counter of one status, looked up once rather than per execution. */
const finishedByStatus = (status: string) =>
  status === "completed"
    ? finishedCompleted
    : status === "failed"
    ? finishedFailed
    : Metric.tagged(executionsFinished, "status", status)

/**
 * Counts one started execution. Synchronously, as `httpRequestCounter` counts: one step per start
 * rather than three (`Metric.increment` reads the fiber's metric labels, which appexec sets none of).
 */
export const recordStarted: Effect.Effect<void> = Effect.sync(() => executionsStarted.unsafeUpdate(1, []))

/** What the count of a finished execution reads of it. */
interface Finished {
  readonly status: string
  readonly startedAt: number | null
  readonly completedAt: number | null
}

/** `recordFinished`, done now: for a writer that counts many executions at once (the worker's saves). */
export const unsafeRecordFinished = (record: Finished): void => {
  finishedByStatus(record.status).unsafeUpdate(1, [])
  if (record.startedAt !== null && record.completedAt !== null) {
    executionDuration.unsafeUpdate(Math.max(0, record.completedAt - record.startedAt) / 1000, [])
  }
}

/** Counts one finished execution: its status, and its run time when it ran (one step, as `recordStarted`). */
export const recordFinished = (record: Finished): Effect.Effect<void> => Effect.sync(() => unsafeRecordFinished(record))

/** Reads the gauges from storage. */
export const refreshGauges: Effect.Effect<void, StorageError, ExecutionStore> = Effect.flatMap(
  ExecutionStore,
  (store) =>
    Effect.flatMap(
      store.countOpen,
      (counts) => Effect.zipRight(Metric.set(queueDepth, counts.queued), Metric.set(executionsRunning, counts.running))
    )
)

const escapeLabel = (value: string) => value.replace(/\\/g, "\\\\").replace(/\n/g, "\\n").replace(/"/g, "\\\"")

const labelsOf = (key: MetricKey.MetricKey.Untyped, extra: ReadonlyArray<readonly [string, string]> = []) => {
  const all = [...key.tags.map((t) => [t.key, t.value] as const), ...extra]
  return all.length === 0 ? "" : `{${all.map(([k, v]) => `${k}="${escapeLabel(v)}"`).join(",")}}`
}

const numberOf = (n: number | bigint) =>
  typeof n === "bigint" ? n.toString() : n === Infinity ? "+Inf" : n === -Infinity ? "-Inf" : String(n)

/**
 * The Prometheus text exposition (version 0.0.4) of `pairs`: the metrics whose name starts with
 * `appexec_`, one `# HELP` and `# TYPE` per name, series sorted.
 */
export const renderPrometheus = (pairs: ReadonlyArray<MetricPair.MetricPair.Untyped>): string => {
  const byName = new Map<string, Array<MetricPair.MetricPair.Untyped>>()
  for (const pair of pairs) {
    const name = pair.metricKey.name
    if (!name.startsWith("appexec_")) continue
    const group = byName.get(name) ?? []
    group.push(pair)
    byName.set(name, group)
  }
  const lines: Array<string> = []
  for (const name of [...byName.keys()].sort()) {
    const group = byName.get(name)!
    group.sort((a, b) => labelsOf(a.metricKey).localeCompare(labelsOf(b.metricKey)))
    const first = group[0]!
    const state = first.metricState
    const type = MetricState.isCounterState(state)
      ? "counter"
      : MetricState.isGaugeState(state)
      ? "gauge"
      : MetricState.isHistogramState(state)
      ? "histogram"
      : "untyped"
    if (first.metricKey.description._tag === "Some") lines.push(`# HELP ${name} ${first.metricKey.description.value}`)
    lines.push(`# TYPE ${name} ${type}`)
    for (const { metricKey, metricState } of group) {
      if (MetricState.isCounterState(metricState)) {
        lines.push(`${name}${labelsOf(metricKey)} ${numberOf(metricState.count)}`)
      } else if (MetricState.isGaugeState(metricState)) {
        lines.push(`${name}${labelsOf(metricKey)} ${numberOf(metricState.value)}`)
      } else if (MetricState.isHistogramState(metricState)) {
        let hasInf = false
        for (const [bound, count] of metricState.buckets) {
          hasInf ||= bound === Infinity
          lines.push(`${name}_bucket${labelsOf(metricKey, [["le", numberOf(bound)]])} ${count}`)
        }
        if (!hasInf) lines.push(`${name}_bucket${labelsOf(metricKey, [["le", "+Inf"]])} ${metricState.count}`)
        lines.push(`${name}_sum${labelsOf(metricKey)} ${metricState.sum}`)
        lines.push(`${name}_count${labelsOf(metricKey)} ${metricState.count}`)
      }
    }
  }
  return `${lines.join("\n")}\n`
}

/**
 * Reading a metric registers it: the series every scrape should show, at zero until they count
 * something, so that rates and alerts have a series from the first scrape.
 */
const registerSeries = Effect.all([
  Metric.value(executionsStarted),
  Metric.value(executionDuration),
  ...["completed", "failed"].map((status) => Metric.value(Metric.tagged(executionsFinished, "status", status))),
  ...["delivered", "retrying", "failed"].map((outcome) =>
    Metric.value(Metric.tagged(webhookDeliveries, "outcome", outcome))
  )
], { discard: true })

/** The metrics of this process, gauges read from storage first, as Prometheus text. */
export const prometheus: Effect.Effect<string, StorageError, ExecutionStore> = Effect.zipRight(
  Effect.zipRight(registerSeries, refreshGauges),
  Effect.map(Metric.snapshot, renderPrometheus)
)
