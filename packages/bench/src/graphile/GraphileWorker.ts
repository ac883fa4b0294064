/** graphile-worker's side of the graphile benchmark: its drain and its add→start, in this process. */
import { Duration, Effect } from "effect"
import * as PostgresServer from "../servers/postgres.js"
import * as Drains from "./Drains.js"
import { CONCURRENCY, COUNT, LATENCY_COUNT, WARMUP } from "./Sizes.js"

/** graphile-worker's module, loaded when its part runs (a dev dependency of the bench alone). */
const graphileWorker = Effect.promise(() => import("graphile-worker"))

/** Quiet: graphile-worker logs each job at info. */
const silent = () => () => {}

/** Adds `count` no-op jobs in batches, before any worker runs. */
const addGraphileJobs = (url: string, count: number) =>
  Effect.promise(() =>
    PostgresServer.withClient(url, async (client) => {
      for (let i = 0; i < count; i += 1_000) {
        const n = Math.min(1_000, count - i)
        await client.query(
          `SELECT graphile_worker.add_jobs(array(
             SELECT ROW('noop', json_build_object('i', g), NULL, NULL, NULL, NULL, NULL, NULL)::graphile_worker.job_spec
             FROM generate_series($1::int, $2::int) AS g))`,
          [i, i + n - 1]
        )
      }
    })
  )

/** graphile-worker draining `COUNT` jobs, unbatched or with its local queue. */
export const graphileDrain = (server: PostgresServer.Server, localQueue: boolean) =>
  Effect.scoped(Effect.gen(function*() {
    const { run, runMigrations, Logger: GraphileLogger } = yield* graphileWorker
    const url = yield* Drains.database(server)
    const logger = new GraphileLogger(silent)
    yield* Effect.promise(() => runMigrations({ connectionString: url, logger }))
    yield* addGraphileJobs(url, COUNT)
    // The drain's jobs held while the warm-up's run: graphile-worker's fetch skips locked jobs.
    const holder = yield* Drains.hold(url, "SELECT id FROM graphile_worker._private_jobs FOR UPDATE")
    yield* addGraphileJobs(url, WARMUP)
    const counter = yield* Drains.counting(url)
    let first = Number.POSITIVE_INFINITY
    const runner = yield* Effect.acquireRelease(
      Effect.promise(() =>
        run({
          connectionString: url,
          concurrency: CONCURRENCY,
          noHandleSignals: true,
          pollInterval: 1_000,
          logger,
          taskList: {
            noop: async () => {
              if (first === Number.POSITIVE_INFINITY) first = Drains.wallNow()
            }
          },
          ...(localQueue
            ? { preset: { worker: { localQueue: { size: 500 }, completeJobBatchDelay: 0 } } }
            : {})
        })
      ),
      (runner) => Effect.promise(() => runner.stop())
    )
    yield* Drains.drained(counter, `SELECT count(*) - ${COUNT} AS n FROM graphile_worker._private_jobs`)
    yield* Drains.analyze(counter, "graphile_worker._private_jobs")
    first = Number.POSITIVE_INFINITY
    const before = {
      own: process.cpuUsage(),
      server: yield* PostgresServer.backendsCpu(url),
      commits: yield* Drains.commits(counter)
    }
    yield* Drains.statementsFrom(counter)
    // Released, and the runner nudged as an add of that many jobs nudges it.
    yield* Drains.release(holder, "jobs:insert", JSON.stringify({ count: COUNT }))
    const { asked, end } = yield* Drains.drained(counter, Drains.anyLeft("graphile_worker._private_jobs"))
    const own = process.cpuUsage(before.own)
    const serverMicros = PostgresServer.cpuUsed(before.server, yield* PostgresServer.backendsCpu(url))
    yield* Drains.printStatements(counter, localQueue ? "graphile_worker_local_queue" : "graphile_worker", COUNT)
    void runner
    return {
      perSecond: (COUNT / (end - first)) * 1000,
      workerCpu: [(own.user + own.system) / COUNT],
      serverCpu: serverMicros / COUNT,
      // Besides the counting's own, the holder's notification.
      commits: (yield* Drains.commitsSince(counter, before.commits, asked + 2)) / COUNT
    } satisfies Drains.Drain
  }))

/** Add→start of `LATENCY_COUNT` jobs added one at a time to an idle worker. */
export const graphileLatency = (server: PostgresServer.Server) =>
  Effect.scoped(Effect.gen(function*() {
    const { run, runMigrations, makeWorkerUtils, Logger: GraphileLogger } = yield* graphileWorker
    const url = yield* Drains.database(server)
    const logger = new GraphileLogger(silent)
    yield* Effect.promise(() => runMigrations({ connectionString: url, logger }))
    let started: (() => void) | undefined
    let startedAt = 0
    yield* Effect.acquireRelease(
      Effect.promise(() =>
        run({
          connectionString: url,
          concurrency: CONCURRENCY,
          noHandleSignals: true,
          pollInterval: 2_000,
          logger,
          taskList: {
            noop: async () => {
              startedAt = Drains.wallNow()
              started?.()
            }
          }
        })
      ),
      (runner) => Effect.promise(() => runner.stop())
    )
    const utils = yield* Effect.acquireRelease(
      Effect.promise(() => makeWorkerUtils({ connectionString: url, logger })),
      (utils) => Effect.promise(async () => utils.release())
    )
    const latencies: Array<number> = []
    for (let i = 0; i < LATENCY_COUNT; i++) {
      const wait = new Promise<void>((resolve) => (started = resolve))
      const added = Drains.wallNow()
      yield* Effect.promise(() => utils.addJob("noop", { i }))
      yield* Effect.promise(() => wait)
      latencies.push(startedAt - added)
      // Idle between jobs, as when traffic is light.
      yield* Effect.sleep(Duration.millis(20))
    }
    return latencies.sort((a, b) => a - b)
  }))
