/** The sizes of the graphile benchmark, each changeable by an `APPEXEC_BENCH_GRAPHILE_*` variable. */

/** Jobs or executions of each drain. */
export const COUNT = Number(process.env["APPEXEC_BENCH_GRAPHILE_COUNT"] ?? 10_000)
/**
 * Jobs or executions each drain runs first per worker process, untimed, once every worker runs:
 * what a worker process does once (compiling its hot code, growing its heap) is not in the drain,
 * for either queue.
 */
export const WARMUP = Number(process.env["APPEXEC_BENCH_GRAPHILE_WARMUP"] ?? 2_000)
/** The parts of the run, from `APPEXEC_BENCH_GRAPHILE_PARTS` (all when unset). */
export const parts = new Set(
  (process.env["APPEXEC_BENCH_GRAPHILE_PARTS"] ??
    "graphile,graphile_local_queue,appexec_1,appexec_2,appexec_embedded,latency").split(
      ","
    )
)
/** Jobs or executions each worker process runs at once. */
export const CONCURRENCY = 16
/** Adds of the latency run, one at a time. */
export const LATENCY_COUNT = 200
