/**
 * The metrics of an appexec instance (docs/operations.md#metrics), as effect `Metric`s in the
 * process's metric registry, and their Prometheus text exposition. Counters and the histograms are
 * updated where things happen (facade, worker, webhook dispatcher, HTTP app); the rest is read when
 * the metrics are rendered: the database's gauges from storage (the same numbers in every process
 * on the database, labelled `scope="database"`, and rendered only where `database` is asked for),
 * the pool's from `DatabasePool`, the process's and runtime's from `ProcessMetrics`.
 */
import { Clock, Effect, Metric, MetricBoundaries, MetricKey, MetricLabel, type MetricPair, MetricState } from "effect"
import { DatabasePool } from "./DatabasePool.js"
import type { StorageError } from "./Errors.js"
import { ExecutionStore } from "./ExecutionStore.js"
import { ProcessMetrics } from "./ProcessMetrics.js"

/** The extra labels of an update: none, one array for every update rather than one a call. */
const noTags: ReadonlyArray<MetricLabel.MetricLabel> = []

/** Executions accepted (`POST /v1/apps/{appId}/executions`, `Appexec.executions.start`). */
export const executionsStarted = Metric.counter("appexec_executions_started_total", {
  description: "Executions accepted (queued)."
})

const executionsFinishedKey = MetricKey.counter("appexec_executions_finished_total", {
  description: "Executions finished, by status."
})

/** Executions finished, by `status` (`completed`, `failed`). */
export const executionsFinished = Metric.fromMetricKey(executionsFinishedKey)

/** The label of the gauges read from the database: one number for every process on it. */
const databaseScope = ["scope", "database"] as const

/** A gauge of the database, labelled `scope="database"`. */
const databaseGauge = (name: string, description: string) =>
  Metric.fromMetricKey(
    MetricKey.taggedWithLabels(MetricKey.gauge(name, { description }), [MetricLabel.make(...databaseScope)])
  )

/** Executions waiting for a worker (unfinished, under no live lease: `ExecutionStore.OpenCounts`), in the whole database. */
export const queueDepth = databaseGauge(
  "appexec_queue_depth",
  "Executions queued, waiting for a worker (the database's: aggregate with max, not sum)."
)

/** Executions running now (unfinished, under a live lease), in the whole database. */
export const executionsRunning = databaseGauge(
  "appexec_executions_running",
  "Executions running now (the database's: aggregate with max, not sum)."
)

/** Seconds the oldest queued execution has waited since it was accepted; 0 when none is queued. */
export const queueOldestAge = databaseGauge(
  "appexec_queue_oldest_age_seconds",
  "Seconds since the oldest queued execution was accepted, 0 when none is queued (the database's)."
)

/** The names of the gauges read from the database (rendered only where `database` is asked for). */
const databaseGauges: ReadonlySet<string> = new Set([
  "appexec_queue_depth",
  "appexec_executions_running",
  "appexec_queue_oldest_age_seconds"
])

/**
 * Runs that took over an execution whose earlier claim neither ended nor was given back (its
 * worker was lost and its lease ran out), counted by the worker that takes it over, where it logs
 * `reclaimed after lost lease`: a run whose claim holds another claim in `Lease.counted`.
 */
export const executionsReclaimed = Metric.counter("appexec_executions_reclaimed_total", {
  description: "Executions claimed again after the lease of a lost worker ran out."
})

/** Counts `n` runs that took over an expired lease (synchronous, one step). */
export const unsafeRecordReclaimed = (n: number): void => {
  if (n > 0) executionsReclaimed.unsafeUpdate(n, noTags)
}

const poolConnectionsKey = MetricKey.gauge("appexec_db_pool_connections", {
  description: "Connections of this process's database pool, by state (in_use, idle)."
})
const poolInUse = Metric.fromMetricKey(
  MetricKey.taggedWithLabels(poolConnectionsKey, [MetricLabel.make("state", "in_use")])
)
const poolIdle = Metric.fromMetricKey(
  MetricKey.taggedWithLabels(poolConnectionsKey, [MetricLabel.make("state", "idle")])
)

/** Queries of this process waiting for a free connection of its pool. */
export const poolWaiting = Metric.gauge("appexec_db_pool_waiting", {
  description: "Queries of this process waiting for a connection of its database pool."
})

/** Most connections this process's pool opens. */
export const poolMax = Metric.gauge("appexec_db_pool_max", {
  description: "Most connections this process's database pool opens."
})

const buildInfoKey = MetricKey.gauge("appexec_build_info", {
  description: "Always 1; the labels name the appexec version and the Node.js version of the process."
})

/** Sets `appexec_build_info{version, node} 1`: the release the process runs and its runtime. */
export const recordBuildInfo = (build: { readonly version: string; readonly node: string }): Effect.Effect<void> =>
  Metric.set(
    Metric.fromMetricKey(
      MetricKey.taggedWithLabels(buildInfoKey, [
        MetricLabel.make("version", build.version),
        MetricLabel.make("node", build.node)
      ])
    ),
    1
  )

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

const httpDurationKey = MetricKey.histogram(
  "appexec_http_request_duration_seconds",
  MetricBoundaries.fromIterable([0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60]),
  "Seconds from a request's arrival to its answer (a stream's opening), by route and status."
)

/** Seconds to answer HTTP requests, by `route` (path template) and `status`. */
export const httpRequestDuration = Metric.fromMetricKey(httpDurationKey)

/**
 * Counts a request of one `route` and `status` in `httpRequests` and observes its seconds in
 * `httpRequestDuration`, synchronously, for a server that answers many requests: both series are
 * looked up in the metric registry once, when this is called, instead of at every request as a
 * `Metric.tagged` metric is. The same series as `httpRequests.pipe(Metric.tagged("route", route),
 * Metric.tagged("status", status))` (and the histogram's alike).
 */
export const httpRequestObserver = (route: string, status: string): (seconds: number) => void => {
  const labels = [MetricLabel.make("route", route), MetricLabel.make("status", status)]
  const counter = Metric.fromMetricKey(MetricKey.taggedWithLabels(httpRequestsKey, labels))
  const histogram = Metric.fromMetricKey(MetricKey.taggedWithLabels(httpDurationKey, labels))
  return (seconds) => {
    counter.unsafeUpdate(1, noTags)
    histogram.unsafeUpdate(seconds, noTags)
  }
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
export const unsafeRecordStarted = (): void => executionsStarted.unsafeUpdate(1, noTags)
/** `unsafeRecordStarted` as an effect. */
export const recordStarted: Effect.Effect<void> = Effect.sync(unsafeRecordStarted)

/** What the count of a finished execution reads of it. */
interface Finished {
  readonly status: string
  readonly startedAt: number | null
  readonly completedAt: number | null
}

/** `recordFinished`, done now: for a writer that counts many executions at once (the worker's saves). */
export const unsafeRecordFinished = (record: Finished): void => {
  finishedByStatus(record.status).unsafeUpdate(1, noTags)
  if (record.startedAt !== null && record.completedAt !== null) {
    executionDuration.unsafeUpdate(Math.max(0, record.completedAt - record.startedAt) / 1000, noTags)
  }
}

/** Counts one finished execution: its status, and its run time when it ran (one step, as `recordStarted`). */
export const recordFinished = (record: Finished): Effect.Effect<void> => Effect.sync(() => unsafeRecordFinished(record))

/** Reads the database's gauges from storage (one read: `ExecutionStore.countOpen`). */
export const refreshGauges: Effect.Effect<void, StorageError, ExecutionStore> = Effect.gen(function*() {
  const store = yield* ExecutionStore
  const now = yield* Clock.currentTimeMillis
  const counts = yield* store.countOpen(now)
  queueDepth.unsafeUpdate(counts.queued, noTags)
  executionsRunning.unsafeUpdate(counts.running, noTags)
  queueOldestAge.unsafeUpdate(counts.oldestQueuedAt === null ? 0 : Math.max(0, now - counts.oldestQueuedAt) / 1000, [])
})

/** Reads the pool's gauges from `DatabasePool`, when the storage has one. */
const refreshPool: Effect.Effect<void> = Effect.flatMap(
  Effect.serviceOption(DatabasePool),
  (pool) =>
    pool._tag === "None" ? Effect.void : Effect.map(pool.value.stats, (stats) => {
      poolInUse.unsafeUpdate(stats.inUse, noTags)
      poolIdle.unsafeUpdate(stats.idle, noTags)
      poolWaiting.unsafeUpdate(stats.waiting, noTags)
      poolMax.unsafeUpdate(stats.max, noTags)
    })
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
 * `appexec_` (the registry may hold other libraries' metrics; the process's own come from
 * `ProcessMetrics`), but `skip`'s, one `# HELP` and `# TYPE` per name, series sorted.
 */
export const renderPrometheus = (
  pairs: ReadonlyArray<MetricPair.MetricPair.Untyped>,
  skip: ReadonlySet<string> = new Set()
): string => {
  const byName = new Map<string, Array<MetricPair.MetricPair.Untyped>>()
  for (const pair of pairs) {
    const name = pair.metricKey.name
    if (!name.startsWith("appexec_") || skip.has(name)) continue
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
  Metric.value(executionsReclaimed),
  ...["completed", "failed"].map((status) => Metric.value(Metric.tagged(executionsFinished, "status", status))),
  ...["delivered", "retrying", "failed"].map((outcome) =>
    Metric.value(Metric.tagged(webhookDeliveries, "outcome", outcome))
  )
], { discard: true })

/** What `prometheusOf` renders. */
export interface ExpositionOptions {
  /**
   * Render the gauges read from the database (`scope="database"`: queue depth, running, oldest
   * queued age). Every process on a database reads the same numbers, so a fleet exports them from
   * its API processes only (`appexec serve`; `appexec worker` does not), and a sum over processes
   * does not count them once per worker.
   */
  readonly database: boolean
}

/**
 * The metrics of this process as Prometheus text: appexec's (the database's gauges read from
 * storage first when `database`), the pool's, then the process's and runtime's (`ProcessMetrics`).
 */
export const prometheusOf = (options: ExpositionOptions): Effect.Effect<string, StorageError, ExecutionStore> =>
  Effect.gen(function*() {
    yield* registerSeries
    if (options.database) yield* refreshGauges
    yield* refreshPool
    const own = renderPrometheus(yield* Metric.snapshot, options.database ? new Set() : databaseGauges)
    const process = yield* Effect.serviceOption(ProcessMetrics)
    return process._tag === "None" ? own : own + (yield* process.value.exposition)
  })

/** The metrics of this process with the database's gauges (`prometheusOf({ database: true })`). */
export const prometheus: Effect.Effect<string, StorageError, ExecutionStore> = prometheusOf({ database: true })
