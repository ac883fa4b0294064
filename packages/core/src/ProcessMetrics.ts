/**
 * Port, optional: the metrics of the process and its runtime (CPU, memory, event-loop delay, …)
 * in the Prometheus text format, under the names Prometheus' client libraries use
 * (`process_*`, `nodejs_*`), read when the metrics are rendered (`AppexecMetrics.prometheus`
 * appends them). Core reads no process of its own: `NodeProcessMetrics` of
 * `@appexec/platform-node` provides it on Node.
 */
import { Context, type Effect } from "effect"

/** The process's own metrics. */
export class ProcessMetrics extends Context.Tag("@appexec/core/ProcessMetrics")<
  ProcessMetrics,
  {
    /** The metrics now, as Prometheus text lines (each name with its `# HELP` and `# TYPE`), ending with a newline. */
    readonly exposition: Effect.Effect<string>
  }
>() {}
