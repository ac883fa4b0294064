/**
 * Side by side with graphile-worker: one embedded PostgreSQL (every commit flushed, the server's
 * default), a database each, and in one run:
 *
 * - graphile-worker 0.17 (in this process, `concurrency` 16) draining 10,000 no-op jobs
 *   unbatched (its defaults), and for reference with its local queue and batched completions;
 * - appexec draining 10,000 no-op executions with one `appexec worker` process of the compiled
 *   command (`--concurrency 16`), then with two.
 *
 * The jobs and executions are all added before any worker starts, held by a transaction of the
 * bench that locks every one (the claims of both queues skip locked rows). The workers start and
 * first run 2,000 more each, untimed (the warm-up, released the same way for appexec's processes
 * once all say they run; each process compiles its own hot code): what a worker does once (its
 * modules, its connections, compiling its hot code, growing its heap) is in neither drain. Then
 * the lock ends and one `NOTIFY` wakes them, as an insert of that many would. A drain is timed
 * from the first start (the task's call; the execution's `started_at`) to the moment a count of
 * what is left (one `count(*)` every 10 ms through an index, the same for both) finds none; each
 * table's statistics are taken (`ANALYZE`) before its drain, as a table in service has them. Then
 * add→start, one at a time with the workers idle (200 each): from before the add to the task's call (graphile-worker,
 * in this process) or to the `started_at` the worker wrote (appexec, to the millisecond, one
 * machine clock). CPU time per execution of each process: this process while graphile-worker
 * drains, each appexec worker process (and its main thread alone), and the PostgreSQL server.
 *
 * `APPEXEC_BENCH_GRAPHILE_COUNT` changes the 10,000, `APPEXEC_BENCH_GRAPHILE_WARMUP` the 2,000;
 * `APPEXEC_BENCH_GRAPHILE_PARTS` picks any of
 * `graphile`, `graphile_local_queue`, `appexec_1`, `appexec_2`, `latency` (all when unset).
 */
import { Appexec, AppexecLayer, IdGenerator } from "@appexec/core"
import { NodeOutboundHttp } from "@appexec/platform-node"
import { PostgresClient, PostgresStorage } from "@appexec/postgres"
import { Duration, Effect, Layer, Logger, LogLevel, Option } from "effect"
import pg from "pg"
import { type Benchmark, type Figure, reportLoad } from "./Benchmark.js"
import { noop } from "./NoopApp.js"
import * as Percentile from "./Percentile.js"
import * as ProcessCpu from "./ProcessCpu.js"
import * as AppexecCommand from "./servers/appexec.js"
import * as PostgresServer from "./servers/postgres.js"
import * as TempDir from "./TempDir.js"

const COUNT = Number(process.env["APPEXEC_BENCH_GRAPHILE_COUNT"] ?? 10_000)
/**
 * Jobs or executions each drain runs first per worker process, untimed, once every worker runs:
 * what a worker process does once (compiling its hot code, growing its heap) is not in the drain,
 * for either queue.
 */
const WARMUP = Number(process.env["APPEXEC_BENCH_GRAPHILE_WARMUP"] ?? 2_000)
const parts = new Set(
  (process.env["APPEXEC_BENCH_GRAPHILE_PARTS"] ?? "graphile,graphile_local_queue,appexec_1,appexec_2,latency").split(
    ","
  )
)
/** Jobs or executions each worker process runs at once. */
const CONCURRENCY = 16
/** Adds of the latency run, one at a time. */
const LATENCY_COUNT = 200

/** Wall-clock time in milliseconds with a fraction, comparable with `Date.now()` of other processes. */
const wallNow = () => performance.timeOrigin + performance.now()

let databases = 0

/** A fresh database on `server`; its URL. */
const database = (server: PostgresServer.Server) =>
  Effect.promise(async () => {
    const name = `graphile_bench_${++databases}`
    await PostgresServer.withClient(server.url, async (client) => {
      await client.query(`CREATE DATABASE ${name}`)
      // Calls of appexec's claim function are counted (pg_stat_user_functions).
      await client.query(`ALTER DATABASE ${name} SET track_functions = 'pl'`)
    })
    const url = new URL(server.url)
    url.pathname = `/${name}`
    return url.href
  })

/** A connection of its own, closed with the scope. */
const connection = (url: string) =>
  Effect.acquireRelease(
    Effect.promise(async () => {
      const client = new pg.Client({ connectionString: url })
      await client.connect()
      return client
    }),
    (client) => Effect.promise(() => client.end())
  )

/**
 * Transactions committed in the database so far (the server's statistics, which each backend
 * flushes within a second of its commits).
 */
const commits = (client: pg.Client) =>
  Effect.map(
    Effect.promise(() =>
      client.query<{ n: string }>("SELECT xact_commit AS n FROM pg_stat_database WHERE datname = current_database()")
    ),
    ({ rows }) => Number(rows[0]!.n)
  )

/** The commits of the drain in the database (read once the statistics are flushed); excludes the counting's own. */
const commitsSince = (client: pg.Client, before: number, counted: number) =>
  Effect.zipRight(
    Effect.sleep(Duration.millis(1_500)),
    // Never below 0: a process that stopped before flushing its statistics leaves them short.
    Effect.map(commits(client), (after) => Math.max(0, after - before - counted))
  )

/** Waits, asking `left` every 10 ms, until it answers 0; the time it did. */
const drained = (client: pg.Client, left: string) =>
  Effect.gen(function*() {
    for (let asked = 1;; asked++) {
      const { rows } = yield* Effect.promise(() => client.query<{ n: string }>(left))
      if (Number(rows[0]!.n) === 0) return { end: wallNow(), asked }
      yield* Effect.sleep(Duration.millis(10))
    }
  })

/**
 * The connection that counts what is left: it reads through indexes (`enable_seqscan` off), so
 * that a count every 10 ms does not read the whole table once its statistics are taken.
 */
const counting = (url: string) =>
  Effect.tap(connection(url), (client) => Effect.promise(() => client.query("SET enable_seqscan = off")))

/**
 * Takes the statistics of `table` before a drain, for both queues alike: a table in service has
 * them (autovacuum's analyze), and a plan that reads a whole table shows only with them.
 */
const analyze = (client: pg.Client, table: string) => Effect.promise(() => client.query(`ANALYZE ${table}`))

/** A transaction of its own on `url` that has locked the rows `lock` selects; rolled back with the scope if not before. */
const hold = (url: string, lock: string) =>
  Effect.tap(connection(url), (client) =>
    Effect.promise(async () => {
      await client.query("BEGIN")
      await client.query(lock)
    }))

/** Ends the hold of `holder`, then notifies `channel` (as an insert would) to wake the idle workers. */
const release = (holder: pg.Client, channel: string, payload: string) =>
  Effect.promise(async () => {
    await holder.query("ROLLBACK")
    await holder.query("SELECT pg_notify($1, $2)", [channel, payload])
  })

interface Drain {
  readonly perSecond: number
  /** CPU per job of the worker processes (µs), one entry per process. */
  readonly workerCpu: ReadonlyArray<number>
  /** Of which their main threads (µs), where measured (appexec's worker processes). */
  readonly mainThreadCpu?: ReadonlyArray<number> | undefined
  readonly serverCpu: number
  /** Transactions committed per job (claims, completions, renewals, notifications, all of them). */
  readonly commits: number
  /** Claim statements per job, where they are counted (appexec's claim function). */
  readonly claims?: number | undefined
  /** Autovacuum and autoanalyze runs of appexec's `executions` table so far (warm-up and drain). */
  readonly maintenance?: { readonly vacuums: number; readonly analyzes: number } | undefined
}

// graphile-worker ----------------------------------------------------------------------------

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
const graphileDrain = (server: PostgresServer.Server, localQueue: boolean) =>
  Effect.scoped(Effect.gen(function*() {
    const { run, runMigrations, Logger: GraphileLogger } = yield* graphileWorker
    const url = yield* database(server)
    const logger = new GraphileLogger(silent)
    yield* Effect.promise(() => runMigrations({ connectionString: url, logger }))
    yield* addGraphileJobs(url, COUNT)
    // The drain's jobs held while the warm-up's run: graphile-worker's fetch skips locked jobs.
    const holder = yield* hold(url, "SELECT id FROM graphile_worker._private_jobs FOR UPDATE")
    yield* addGraphileJobs(url, WARMUP)
    const counter = yield* counting(url)
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
              if (first === Number.POSITIVE_INFINITY) first = wallNow()
            }
          },
          ...(localQueue
            ? { preset: { worker: { localQueue: { size: 500 }, completeJobBatchDelay: 0 } } }
            : {})
        })
      ),
      (runner) => Effect.promise(() => runner.stop())
    )
    yield* drained(counter, `SELECT count(*) - ${COUNT} AS n FROM graphile_worker._private_jobs`)
    yield* analyze(counter, "graphile_worker._private_jobs")
    first = Number.POSITIVE_INFINITY
    const before = {
      own: process.cpuUsage(),
      server: yield* PostgresServer.backendsCpu(url),
      commits: yield* commits(counter)
    }
    // Released, and the runner nudged as an add of that many jobs nudges it.
    yield* release(holder, "jobs:insert", JSON.stringify({ count: COUNT }))
    const { asked, end } = yield* drained(counter, "SELECT count(*) AS n FROM graphile_worker._private_jobs")
    const own = process.cpuUsage(before.own)
    const serverMicros = PostgresServer.cpuUsed(before.server, yield* PostgresServer.backendsCpu(url))
    void runner
    return {
      perSecond: (COUNT / (end - first)) * 1000,
      workerCpu: [(own.user + own.system) / COUNT],
      serverCpu: serverMicros / COUNT,
      // Besides the counting's own, the holder's notification.
      commits: (yield* commitsSince(counter, before.commits, asked + 2)) / COUNT
    } satisfies Drain
  }))

/** Add→start of `LATENCY_COUNT` jobs added one at a time to an idle worker. */
const graphileLatency = (server: PostgresServer.Server) =>
  Effect.scoped(Effect.gen(function*() {
    const { run, runMigrations, makeWorkerUtils, Logger: GraphileLogger } = yield* graphileWorker
    const url = yield* database(server)
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
              startedAt = wallNow()
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
      const added = wallNow()
      yield* Effect.promise(() => utils.addJob("noop", { i }))
      yield* Effect.promise(() => wait)
      latencies.push(startedAt - added)
      // Idle between jobs, as when traffic is light.
      yield* Effect.sleep(Duration.millis(20))
    }
    return latencies.sort((a, b) => a - b)
  }))

// appexec ------------------------------------------------------------------------------------

/** This process as appexec's API on `url` (no worker): it adds the executions. */
const api = (url: string) =>
  AppexecLayer.make({ worker: false, webhooks: false }).pipe(
    Layer.provideMerge(PostgresStorage.layer({ connectionString: url, poolSize: 16 })),
    Layer.provide(IdGenerator.IdGenerator.random),
    Layer.provide(NodeOutboundHttp.layer({ allowPrivateNetworks: true }))
  )

const setUp = Effect.gen(function*() {
  const appexec = yield* Appexec.Appexec
  const app = yield* appexec.apps.import(noop, { owner: { public: true } })
  const { key } = yield* appexec.keys.create({ workspace: "bench" })
  const principal = yield* appexec.keys.authenticate({ "x-api-key": key })
  return { appexec, appId: app.appId, principal }
})

/** `count` `appexec worker` processes on `url`, started at once; stopped with the scope. */
const appexecWorkers = (url: string, count: number) =>
  Effect.flatMap(TempDir.make("graphile"), (dir) =>
    Effect.forEach(
      Array.from({ length: count }, (_, i) => i),
      () =>
        AppexecCommand.worker(
          ["--concurrency", String(CONCURRENCY), "--data", dir],
          { APPEXEC_DATABASE_URL: url, ...masterKey }
        ),
      { concurrency: "unbounded" }
    ))

/** One master key for every process of a run. */
const masterKey = AppexecCommand.masterKey()

/** appexec draining `COUNT` executions with `processes` worker processes. */
const appexecDrain = (server: PostgresServer.Server, processes: number) =>
  Effect.scoped(Effect.gen(function*() {
    const url = yield* database(server)
    const counter = yield* counting(url)
    const { held, last, warmUp } = yield* Effect.gen(function*() {
      const { appexec, appId, principal } = yield* setUp
      yield* Effect.forEach(
        Array.from({ length: COUNT }, (_, i) => i),
        (i) => appexec.executions.start(principal, appId, { in: `${i}` }),
        { concurrency: 64, discard: true }
      )
      const { rows } = yield* Effect.promise(() => counter.query<{ n: string }>("SELECT max(seq) AS n FROM executions"))
      // Held while the worker processes start (their claims skip locked rows), the warm-up's too.
      const held = yield* hold(url, "SELECT seq FROM executions WHERE status = 'queued' FOR UPDATE")
      // Each process gets the warm-up graphile-worker's one process gets: its own hot code to compile.
      yield* Effect.forEach(
        Array.from({ length: WARMUP * processes }, (_, i) => i),
        (i) => appexec.executions.start(principal, appId, { in: `warm-up ${i}` }),
        { concurrency: 64, discard: true }
      )
      const warmUp = yield* hold(url, "SELECT seq FROM executions WHERE status = 'queued' FOR UPDATE SKIP LOCKED")
      return { held, warmUp, last: Number(rows[0]!.n) }
    }).pipe(Effect.provide(api(url)))
    const children = yield* appexecWorkers(url, processes)
    const pids = children.flatMap((child) => child.pid ?? [])
    // The warm-up, once every process runs, woken as an insert would wake them.
    const channel = PostgresClient.workChannel("public")
    yield* release(warmUp, channel, "")
    yield* drained(counter, `SELECT count(*) - ${COUNT} AS n FROM executions WHERE status IN ('queued', 'running')`)
    yield* analyze(counter, "executions")
    const before = yield* PostgresServer.backendsCpu(url)
    const commitsBefore = yield* commits(counter)
    const cpuBefore = pids.map(ProcessCpu.ofProcess)
    const mainBefore = pids.map(ProcessCpu.ofMainThread)
    yield* release(held, channel, "")
    const { asked, end } = yield* drained(
      counter,
      "SELECT count(*) AS n FROM executions WHERE status IN ('queued', 'running')"
    )
    const workerCpu = pids.map((pid, i) => (ProcessCpu.ofProcess(pid) - cpuBefore[i]!) / COUNT)
    const mainThreadCpu = pids.map((pid, i) => (ProcessCpu.ofMainThread(pid) - mainBefore[i]!) / COUNT)
    const serverMicros = PostgresServer.cpuUsed(before, yield* PostgresServer.backendsCpu(url))
    // Besides the counting's own, the holder's notification.
    const committed = yield* commitsSince(counter, commitsBefore, asked + 3)
    const claims = yield* Effect.promise(() =>
      counter.query<{ n: string }>(
        "SELECT coalesce(sum(calls), 0) AS n FROM pg_stat_user_functions WHERE funcname = 'appexec_claim_executions'"
      )
    )
    const autovacuum = yield* Effect.promise(() =>
      counter.query<{ vacuums: string; analyzes: string }>(
        `SELECT autovacuum_count AS vacuums, autoanalyze_count AS analyzes FROM pg_stat_user_tables
         WHERE relname = 'executions'`
      )
    )
    const { rows } = yield* Effect.promise(() =>
      counter.query<{ first: string; failed: string }>(
        `SELECT min(started_at) FILTER (WHERE seq <= $1) AS first, count(*) FILTER (WHERE status <> 'completed') AS failed
         FROM executions`,
        [last]
      )
    )
    if (Number(rows[0]!.failed) > 0) yield* Effect.dieMessage(`${rows[0]!.failed} executions did not complete`)
    return {
      perSecond: (COUNT / (end - Number(rows[0]!.first))) * 1000,
      workerCpu,
      mainThreadCpu,
      serverCpu: serverMicros / COUNT,
      commits: committed / COUNT,
      claims: Number(claims.rows[0]!.n) / COUNT,
      maintenance: {
        vacuums: Number(autovacuum.rows[0]?.vacuums ?? 0),
        analyzes: Number(autovacuum.rows[0]?.analyzes ?? 0)
      }
    } satisfies Drain
  }))

/** Add→start of `LATENCY_COUNT` executions started one at a time with one idle worker process. */
const appexecLatency = (server: PostgresServer.Server) =>
  Effect.scoped(Effect.gen(function*() {
    const url = yield* database(server)
    const counter = yield* connection(url)
    return yield* Effect.gen(function*() {
      const { appexec, appId, principal } = yield* setUp
      yield* appexecWorkers(url, 1)
      const latencies: Array<number> = []
      for (let i = 0; i < LATENCY_COUNT; i++) {
        const added = wallNow()
        const { executionId } = yield* appexec.executions.start(principal, appId, { in: `${i}` })
        for (;;) {
          const { rows } = yield* Effect.promise(() =>
            counter.query<{ started_at: string | null }>(
              "SELECT started_at FROM executions WHERE execution_id = $1",
              [executionId]
            )
          )
          const startedAt = Option.fromNullable(rows[0]?.started_at)
          if (Option.isSome(startedAt)) {
            latencies.push(Number(startedAt.value) - added)
            break
          }
          yield* Effect.sleep(Duration.millis(2))
        }
        yield* Effect.sleep(Duration.millis(20))
      }
      return latencies.sort((a, b) => a - b)
    }).pipe(Effect.provide(api(url)))
  }))

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
      const anchor = drains.get("graphile_worker")
      if (anchor !== undefined) {
        for (const name of ["appexec.workers_1", "appexec.workers_2"]) {
          const ours = drains.get(name)
          if (ours === undefined) continue
          yield* report({
            name: `graphile.${name}.to_graphile_worker`,
            value: ours.perSecond / anchor.perSecond,
            unit: "of graphile-worker unbatched (goal >= 1.0)"
          })
        }
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
