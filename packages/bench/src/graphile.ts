/**
 * Side by side with graphile-worker: one embedded PostgreSQL (every commit flushed, the server's
 * default), a database each, and in one run:
 *
 * - graphile-worker 0.17 (in this process, `concurrency` 16) draining 10,000 no-op jobs
 *   unbatched (its defaults), and for reference with its local queue and batched completions;
 * - appexec draining 10,000 no-op executions with one `appexec worker` process of the compiled
 *   command (`--concurrency 16`), then with two;
 * - appexec embedded in this process (`createAppexec`, its worker beside), starting 10,000 no-op
 *   executions 64 at a time while it runs them (`graphile/Embedded.ts`).
 *
 * The jobs and executions are all added before any worker starts, held by a transaction of the
 * bench that locks every one (the claims of both queues skip locked rows). The workers start and
 * first run 2,000 more each, untimed (the warm-up, released the same way for appexec's processes
 * once all say they run; each process compiles its own hot code): what a worker does once (its
 * modules, its connections, compiling its hot code, growing its heap) is in neither drain. Then
 * the lock ends and one `NOTIFY` wakes them, as an insert of that many would. A drain is timed
 * from the first start (the task's call; the execution's `started_at`) to the moment a look for
 * what is left (one `LIMIT 1` every 10 ms, the same for both: `Drains.anyLeft`) finds none; each
 * table's statistics are taken (`ANALYZE`) before its drain, as a table in service has them. Then
 * add→start, one at a time with the workers idle (200 each): from before the add to the task's call (graphile-worker,
 * in this process) or to the `started_at` the worker wrote (appexec, to the millisecond, one
 * machine clock). CPU time per execution of each process: this process while graphile-worker
 * drains, each appexec worker process (and its main thread alone), and the PostgreSQL server.
 * The ratios printed: each appexec drain against graphile-worker unbatched, one worker process
 * against graphile-worker's local queue, and two processes against one.
 *
 * `APPEXEC_BENCH_GRAPHILE_COUNT` changes the 10,000, `APPEXEC_BENCH_GRAPHILE_WARMUP` the 2,000;
 * `APPEXEC_BENCH_GRAPHILE_PARTS` picks any of
 * `graphile`, `graphile_local_queue`, `appexec_1`, `appexec_2`, `appexec_embedded`, `latency` (all when
 * unset).
 */
import { Effect, Logger, LogLevel } from "effect"
import { type Benchmark, type Figure, reportLoad } from "./Benchmark.js"
import { appexecDrain, appexecLatency } from "./graphile/Appexec.js"
import type { Drain } from "./graphile/Drains.js"
import { appexecEmbedded } from "./graphile/Embedded.js"
import { graphileDrain, graphileLatency } from "./graphile/GraphileWorker.js"
import { COUNT, parts } from "./graphile/Sizes.js"
import * as Percentile from "./Percentile.js"
import * as PostgresServer from "./servers/postgres.js"

const ms = (name: string, value: number): Figure => ({ name, value, unit: "ms" })

/** The side-by-side benchmark. */
export const benchmark: Benchmark = {
  name: "graphile",
  run: (report) =>
    Effect.gen(function*() {
      const load = (when: string) => reportLoad(report, "graphile", when)
      yield* load("start")
      const server = yield* PostgresServer.scoped
      const drains = new Map<string, Drain>()
      const measure = (name: string, drain: Effect.Effect<Drain, unknown>) =>
        Effect.gen(function*() {
          const result = yield* drain
          drains.set(name, result)
          yield* report({ name: `graphile.${name}.${COUNT}.drain`, value: result.perSecond, unit: "per s" })
          for (const [i, micros] of result.workerCpu.entries()) {
            yield* report({ name: `graphile.${name}.cpu_per_execution.worker_${i + 1}`, value: micros, unit: "µs" })
          }
          for (const [i, micros] of (result.mainThreadCpu ?? []).entries()) {
            yield* report({
              name: `graphile.${name}.cpu_per_execution.worker_${i + 1}.main_thread`,
              value: micros,
              unit: "µs"
            })
          }
          yield* report({ name: `graphile.${name}.cpu_per_execution.postgres`, value: result.serverCpu, unit: "µs" })
          yield* report({ name: `graphile.${name}.commits_per_execution`, value: result.commits, unit: "transactions" })
          if (result.claims !== undefined) {
            yield* report({ name: `graphile.${name}.claims_per_execution`, value: result.claims, unit: "claims" })
          }
          if (result.maintenance !== undefined) {
            const { analyzes, vacuums } = result.maintenance
            yield* report({ name: `graphile.${name}.autovacuums`, value: vacuums, unit: "runs" })
            yield* report({ name: `graphile.${name}.autoanalyzes`, value: analyzes, unit: "runs" })
          }
        })
      if (parts.has("graphile")) yield* measure("graphile_worker", graphileDrain(server, false))
      if (parts.has("graphile_local_queue")) {
        yield* measure("graphile_worker_local_queue", graphileDrain(server, true))
      }
      if (parts.has("appexec_1")) yield* measure("appexec.workers_1", appexecDrain(server, 1))
      if (parts.has("appexec_2")) yield* measure("appexec.workers_2", appexecDrain(server, 2))
      if (parts.has("appexec_embedded")) {
        const embedded = yield* appexecEmbedded(server)
        drains.set("appexec.embedded", embedded)
        yield* report({
          name: `graphile.appexec.embedded.${COUNT}.start_and_run`,
          value: embedded.perSecond,
          unit: "per s"
        })
        yield* report({
          name: `graphile.appexec.embedded.${COUNT}.starts`,
          value: embedded.startsPerSecond,
          unit: "per s"
        })
        yield* report({
          name: "graphile.appexec.embedded.cpu_per_execution.host",
          value: embedded.workerCpu[0]!,
          unit: "µs"
        })
        yield* report({
          name: "graphile.appexec.embedded.cpu_per_execution.postgres",
          value: embedded.serverCpu,
          unit: "µs"
        })
        yield* report({
          name: "graphile.appexec.embedded.commits_per_execution",
          value: embedded.commits,
          unit: "transactions"
        })
      }
      const anchor = drains.get("graphile_worker")
      if (anchor !== undefined) {
        for (const name of ["appexec.workers_1", "appexec.workers_2", "appexec.embedded"]) {
          const ours = drains.get(name)
          if (ours === undefined) continue
          yield* report({
            name: `graphile.${name}.to_graphile_worker`,
            value: ours.perSecond / anchor.perSecond,
            unit: "of graphile-worker unbatched (goal >= 1.0)"
          })
        }
      }
      const localQueue = drains.get("graphile_worker_local_queue")
      const one = drains.get("appexec.workers_1")
      if (localQueue !== undefined && one !== undefined) {
        yield* report({
          name: "graphile.appexec.workers_1.to_local_queue",
          value: one.perSecond / localQueue.perSecond,
          unit: "of graphile-worker's local queue (goal >= 1.0)"
        })
      }
      const two = drains.get("appexec.workers_2")
      if (one !== undefined && two !== undefined) {
        yield* report({
          name: "graphile.appexec.workers_2.to_workers_1",
          value: two.perSecond / one.perSecond,
          unit: "of one worker process (goal >= 1.0)"
        })
      }
      if (parts.has("latency")) {
        const theirs = yield* graphileLatency(server)
        yield* report(ms("graphile.graphile_worker.add_to_start_p50", Percentile.of(theirs, 50)))
        yield* report(ms("graphile.graphile_worker.add_to_start_p99", Percentile.of(theirs, 99)))
        const ours = yield* appexecLatency(server)
        yield* report(ms("graphile.appexec.add_to_start_p50", Percentile.of(ours, 50)))
        yield* report(ms("graphile.appexec.add_to_start_p99", Percentile.of(ours, 99)))
      }
      yield* load("end")
    }).pipe(Effect.scoped, Effect.provide(Logger.minimumLogLevel(LogLevel.Warning)))
}
