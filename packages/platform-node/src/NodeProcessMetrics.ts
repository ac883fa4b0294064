/**
 * core's `ProcessMetrics` on Node.js: the process's and the runtime's metrics under the names of
 * Prometheus' Node.js client (`prom-client`'s default metrics), so that the dashboards made for it
 * read appexec's: CPU seconds, resident memory, start time, open file descriptors, heap, active
 * resources, and the event loop's delay. Everything is read when the metrics are rendered; the
 * event loop's delay is sampled by `perf_hooks.monitorEventLoopDelay` while the layer is up, and
 * its percentiles cover the time since the previous rendering.
 */
import { ProcessMetrics } from "@appexec/core"
import { Effect, Layer } from "effect"
import { readdirSync } from "node:fs"
import { monitorEventLoopDelay } from "node:perf_hooks"

/** How often the event-loop monitor samples, in ms (prom-client's default precision). */
const RESOLUTION_MS = 10

/** One metric with one sample (with `labels`, if any), its `# HELP` and `# TYPE`. */
const metric = (
  name: string,
  type: "gauge" | "counter",
  help: string,
  value: number,
  labels = ""
): string => `# HELP ${name} ${help}\n# TYPE ${name} ${type}\n${name}${labels} ${value}\n`

/** Open file descriptors, on Linux (`/proc/self/fd`, less the one the listing opens); none elsewhere. */
const openFds = (): number | undefined => {
  if (process.platform !== "linux") return undefined
  try {
    return readdirSync("/proc/self/fd").length - 1
  } catch {
    return undefined
  }
}

/** The delay of one turn of the event loop now: how long a `setImmediate` waits, in seconds. */
const immediateLag: Effect.Effect<number> = Effect.async<number>((resume) => {
  const from = performance.now()
  setImmediate(() => resume(Effect.succeed((performance.now() - from) / 1000)))
})

/** The version labels of `nodejs_version_info`. */
const versionLabels = (() => {
  const [major = "0", minor = "0", patch = "0"] = process.versions.node.split(".")
  return `{version="v${process.versions.node}",major="${major}",minor="${minor}",patch="${patch}"}`
})()

/**
 * `ProcessMetrics` of this process: the event-loop monitor runs while the layer is up (it keeps
 * no process alive).
 */
export const layer: Layer.Layer<ProcessMetrics.ProcessMetrics> = Layer.scoped(
  ProcessMetrics.ProcessMetrics,
  Effect.gen(function*() {
    const delay = yield* Effect.acquireRelease(
      Effect.sync(() => {
        const histogram = monitorEventLoopDelay({ resolution: RESOLUTION_MS })
        histogram.enable()
        return histogram
      }),
      (histogram) => Effect.sync(() => histogram.disable())
    )
    const startTime = Date.now() / 1000 - process.uptime()
    const exposition = Effect.map(immediateLag, (lag) => {
      const cpu = process.cpuUsage()
      const memory = process.memoryUsage()
      const fds = openFds()
      // The monitor's figures since the previous rendering (nanoseconds), then a fresh window.
      const sampled = delay.count > 0
      const seconds = (ns: number) => (sampled ? ns / 1e9 : 0)
      const window = {
        min: seconds(delay.min),
        max: seconds(delay.max),
        mean: seconds(delay.mean),
        stddev: seconds(delay.stddev),
        p50: seconds(delay.percentile(50)),
        p90: seconds(delay.percentile(90)),
        p99: seconds(delay.percentile(99))
      }
      delay.reset()
      return [
        metric("process_cpu_user_seconds_total", "counter", "Total user CPU time spent in seconds.", cpu.user / 1e6),
        metric(
          "process_cpu_system_seconds_total",
          "counter",
          "Total system CPU time spent in seconds.",
          cpu.system / 1e6
        ),
        metric(
          "process_cpu_seconds_total",
          "counter",
          "Total user and system CPU time spent in seconds.",
          (cpu.user + cpu.system) / 1e6
        ),
        metric(
          "process_start_time_seconds",
          "gauge",
          "Start time of the process since unix epoch in seconds.",
          Math.round(startTime)
        ),
        metric("process_resident_memory_bytes", "gauge", "Resident memory size in bytes.", memory.rss),
        fds === undefined ? "" : metric("process_open_fds", "gauge", "Number of open file descriptors.", fds),
        metric("nodejs_eventloop_lag_seconds", "gauge", "Lag of event loop in seconds.", lag),
        metric("nodejs_eventloop_lag_min_seconds", "gauge", "The minimum recorded event loop delay.", window.min),
        metric("nodejs_eventloop_lag_max_seconds", "gauge", "The maximum recorded event loop delay.", window.max),
        metric(
          "nodejs_eventloop_lag_mean_seconds",
          "gauge",
          "The mean of the recorded event loop delays.",
          window.mean
        ),
        metric(
          "nodejs_eventloop_lag_stddev_seconds",
          "gauge",
          "The standard deviation of the recorded event loop delays.",
          window.stddev
        ),
        metric(
          "nodejs_eventloop_lag_p50_seconds",
          "gauge",
          "The 50th percentile of the recorded event loop delays.",
          window.p50
        ),
        metric(
          "nodejs_eventloop_lag_p90_seconds",
          "gauge",
          "The 90th percentile of the recorded event loop delays.",
          window.p90
        ),
        metric(
          "nodejs_eventloop_lag_p99_seconds",
          "gauge",
          "The 99th percentile of the recorded event loop delays.",
          window.p99
        ),
        metric(
          "nodejs_active_resources_total",
          "gauge",
          "Total number of active resources keeping the event loop alive.",
          process.getActiveResourcesInfo().length
        ),
        metric("nodejs_heap_size_total_bytes", "gauge", "Process heap size from Node.js in bytes.", memory.heapTotal),
        metric(
          "nodejs_heap_size_used_bytes",
          "gauge",
          "Process heap size used from Node.js in bytes.",
          memory.heapUsed
        ),
        metric("nodejs_external_memory_bytes", "gauge", "Node.js external memory size in bytes.", memory.external),
        metric("nodejs_version_info", "gauge", "Node.js version info.", 1, versionLabels)
      ].join("")
    })
    return ProcessMetrics.ProcessMetrics.of({ exposition })
  })
)
