/**
 * Scaling benchmark: no-op executions accepted by this process (the API, in-process, with no
 * worker) and run by 1, 2 and 4 separate `appexec worker` processes of the compiled command, on
 * PostgreSQL (an embedded server; every commit flushed, as by default, and with
 * `synchronous_commit = off`) and on one SQLite file, in the same run.
 *
 * Figures per database and worker count: throughput (executions accepted at once, from the first
 * acceptance to the last completion), p50/p99 start→completed under that load, the CPU time per
 * execution of the worker processes, of this process and of the PostgreSQL server; and with one
 * worker process idle, executions one at a time: pickup (accepted → running in the worker
 * process) and start→completed, p50/p99. Times come from the execution records, written by the
 * processes on one machine clock, to the millisecond.
 */
import { type Appexec, AppexecLayer, type ExecutionRecord, ExecutionStore, IdGenerator } from "@appexec/core"
import { NodeOutboundHttp } from "@appexec/platform-node"
import { PostgresStorage } from "@appexec/postgres"
import { SqliteStorage } from "@appexec/sqlite"
import { Duration, Effect, Layer, Logger, LogLevel, Option, type Scope } from "effect"
import { join } from "node:path"
import pg from "pg"
import { type Benchmark, type Figure, reportLoad } from "./Benchmark.js"
import * as NoopApp from "./NoopApp.js"
import * as Percentile from "./Percentile.js"
import * as ProcessCpu from "./ProcessCpu.js"
import * as AppexecCommand from "./servers/appexec.js"
import * as PostgresServer from "./servers/postgres.js"
import * as TempDir from "./TempDir.js"

/** Executions per throughput run. */
const COUNT = 3_000
/** Executions of the idle run. */
const IDLE_COUNT = 200
/** Executions each worker process runs at once. */
const CONCURRENCY = 16

/** `appexec worker` processes on the database of `args`/`env`; stopped (SIGTERM, then waited for) with the scope. */
const workers = (count: number, args: ReadonlyArray<string>, env: Record<string, string>) =>
  Effect.forEach(
    Array.from({ length: count }, (_, i) => i),
    () => AppexecCommand.worker(["--concurrency", String(CONCURRENCY), ...args], env)
  )

/**
 * Waits until every execution of `ids` has finished, looking every `everyMs` (sparingly: the
 * polls share the machine with the work they wait for); their records.
 */
const finished = (ids: ReadonlyArray<ExecutionRecord.ExecutionRecord["executionId"]>, everyMs: number) =>
  Effect.gen(function*() {
    const store = yield* ExecutionStore.ExecutionStore
    const records: Array<ExecutionRecord.ExecutionRecord> = []
    for (const id of ids) {
      for (;;) {
        const record = yield* store.get(id)
        if (Option.isSome(record) && (record.value.status === "completed" || record.value.status === "failed")) {
          records.push(record.value)
          break
        }
        yield* Effect.sleep(Duration.millis(everyMs))
      }
    }
    return records
  })

/**
 * Waits until every execution of `ids` has finished, asking which of those still open have
 * (one statement every `everyMs`, so that the waiting takes little from the work it waits for).
 */
const allFinished = (ids: ReadonlyArray<ExecutionRecord.ExecutionRecord["executionId"]>, everyMs: number) =>
  Effect.gen(function*() {
    const store = yield* ExecutionStore.ExecutionStore
    let open = ids
    while (open.length > 0) {
      yield* Effect.sleep(Duration.millis(everyMs))
      const done = new Set(yield* store.finishedAmong(open))
      open = open.filter((id) => !done.has(id))
    }
  })

/** The processes whose CPU time a run counts: the workers, and the database server's. */
interface Processes {
  readonly workers: ReadonlyArray<number>
  /** The server processes of the database now (none for SQLite). */
  readonly server: Effect.Effect<ReadonlyArray<number>>
}

/** CPU time used so far by each group: the worker processes, this process (the API), the server. */
const cpuNow = (processes: Processes) =>
  Effect.map(processes.server, (server) => {
    const own = process.cpuUsage()
    return {
      workers: processes.workers.reduce((sum, pid) => sum + ProcessCpu.ofProcess(pid), 0),
      api: own.user + own.system,
      server: new Map(server.map((pid) => [pid, ProcessCpu.ofProcess(pid)]))
    }
  })

/** `COUNT` executions accepted at once; throughput, start→completed times, and CPU per execution. */
const throughput = (processes: Processes) =>
  Effect.gen(function*() {
    const { appexec, appId, principal } = yield* NoopApp.setUp
    const before = yield* cpuNow(processes)
    const started = yield* Effect.forEach(
      Array.from({ length: COUNT }, (_, i) => i),
      (i) => appexec.executions.start(principal, appId, { in: `${i}` }),
      { concurrency: 64 }
    )
    yield* allFinished(started.map((s) => s.executionId), 50)
    const after = yield* cpuNow(processes)
    // Read once every execution has finished: the figures come from the records.
    const records = yield* finished(started.map((s) => s.executionId), 50)
    const first = Math.min(...records.map((r) => r.createdAt))
    const last = Math.max(...records.map((r) => r.completedAt ?? 0))
    const latencies = records.map((r) => (r.completedAt ?? 0) - r.createdAt).sort((a, b) => a - b)
    // A server process that started during the run counts whole; one that ended during it is missed.
    let server = 0
    for (const [pid, used] of after.server) server += used - (before.server.get(pid) ?? 0)
    const per = (micros: number) => micros / records.length
    return {
      perSecond: (records.length / Math.max(1, last - first)) * 1000,
      latencies,
      cpu: { workers: per(after.workers - before.workers), api: per(after.api - before.api), server: per(server) }
    }
  })

/** Executions one at a time, each awaited; pickup and start→completed times. */
const idle = (_: Processes) =>
  Effect.gen(function*() {
    const { appexec, appId, principal } = yield* NoopApp.setUp
    const pickups: Array<number> = []
    const totals: Array<number> = []
    for (let i = 0; i < IDLE_COUNT; i++) {
      const started = yield* appexec.executions.start(principal, appId, { in: `${i}` })
      const [record] = yield* finished([started.executionId], 5)
      pickups.push((record!.startedAt ?? 0) - record!.createdAt)
      totals.push((record!.completedAt ?? 0) - record!.createdAt)
      // Idle between executions: the worker waits for work, as when traffic is light.
      yield* Effect.sleep(Duration.millis(20))
    }
    return { pickups: pickups.sort((a, b) => a - b), totals: totals.sort((a, b) => a - b) }
  })

/** The API of the benchmark: this process, accepting executions, running none. */
const api = (storage: Layer.Layer<AppexecLayer.Storage, unknown>) =>
  AppexecLayer.make({ worker: false, webhooks: false }).pipe(
    Layer.provideMerge(storage),
    Layer.provide(IdGenerator.IdGenerator.random),
    Layer.provide(NodeOutboundHttp.layer({ allowPrivateNetworks: true }))
  )

interface Target {
  readonly name: string
  /** A fresh database: the API's storage, and the worker's arguments and environment. */
  readonly database: Effect.Effect<
    {
      readonly storage: Layer.Layer<AppexecLayer.Storage, unknown>
      readonly args: ReadonlyArray<string>
      readonly env: Record<string, string>
      /** The database server's processes now (none for SQLite). */
      readonly server: Effect.Effect<ReadonlyArray<number>>
    },
    unknown,
    Scope.Scope
  >
}

/** A fresh directory of its own for the workers' data (the SQLite file, the master key), removed with the scope. */
const dataDir = TempDir.make("scaling")

const sqlite: Target = {
  name: "sqlite",
  database: Effect.map(dataDir, (dir) => ({
    storage: SqliteStorage.layer({ filename: join(dir, "appexec.db") }),
    args: ["--data", dir],
    env: AppexecCommand.masterKey(),
    server: Effect.succeed([])
  }))
}

let databases = 0

/** The processes of the server: every backend and background process it lists. */
const serverProcesses = (server: PostgresServer.Server) =>
  Effect.promise(async () => {
    const admin = new pg.Client({ connectionString: server.url })
    await admin.connect()
    try {
      const result = await admin.query<{ pid: number }>("SELECT pid FROM pg_stat_activity")
      return result.rows.map((row) => row.pid)
    } finally {
      await admin.end()
    }
  })

/**
 * PostgreSQL with the server's default durability (`flushed`: every commit waits for its flush
 * to disk), or with `synchronous_commit = off` for the database (`unflushed`: a crash of the
 * machine may lose the last commits, never consistency — what SQLite's default promises).
 */
const postgres = (server: PostgresServer.Server, durability: "flushed" | "unflushed"): Target => {
  return {
    name: durability === "flushed" ? "postgres" : "postgres_unflushed",
    database: Effect.zipWith(
      dataDir,
      Effect.promise(async () => {
        const name = `bench_${++databases}`
        const admin = new pg.Client({ connectionString: server.url })
        await admin.connect()
        await admin.query(`CREATE DATABASE ${name}`)
        if (durability === "unflushed") await admin.query(`ALTER DATABASE ${name} SET synchronous_commit = off`)
        await admin.end()
        const url = new URL(server.url)
        url.pathname = `/${name}`
        return url.href
      }),
      (dir, url) => ({
        storage: PostgresStorage.layer({ connectionString: url, poolSize: 16 }),
        args: ["--data", dir],
        env: { APPEXEC_DATABASE_URL: url, ...AppexecCommand.masterKey() },
        server: serverProcesses(server)
      })
    )
  }
}

const ms = (name: string, value: number): Figure => ({ name, value, unit: "ms" })

/** Runs `measure` against a fresh database of `target` with `processes` workers. */
const measured = <A>(
  target: Target,
  processes: number,
  measure: (processes: Processes) => Effect.Effect<A, unknown, Appexec.Appexec | ExecutionStore.ExecutionStore>
) =>
  Effect.scoped(
    Effect.gen(function*() {
      const { storage, args, env, server } = yield* target.database
      return yield* Effect.gen(function*() {
        // The schema exists before the workers open the database.
        const children = yield* workers(processes, args, env)
        return yield* measure({ workers: children.flatMap((child) => child.pid ?? []), server })
      }).pipe(Effect.provide(api(storage)))
    })
  )

/** The scaling benchmark. */
export const benchmark: Benchmark = {
  name: "scaling",
  run: (report) =>
    Effect.gen(function*() {
      // How busy the machine was: every figure below moves with it.
      const load = (when: string) => reportLoad(report, "scaling", when)
      yield* load("start")
      const server = yield* PostgresServer.scoped
      for (const target of [postgres(server, "flushed"), postgres(server, "unflushed"), sqlite]) {
        for (const processes of [1, 2, 4]) {
          const result = yield* measured(target, processes, throughput)
          const prefix = `scaling.${target.name}.workers_${processes}`
          yield* report({ name: `${prefix}.throughput`, value: result.perSecond, unit: "executions/s" })
          yield* report(ms(`${prefix}.start_to_completed_p50`, Percentile.of(result.latencies, 50)))
          yield* report(ms(`${prefix}.start_to_completed_p99`, Percentile.of(result.latencies, 99)))
          // What bounds the rate once the processes share the cores: CPU time per execution
          // (Linux; the API's figure includes the benchmark's own waiting, one query every 50 ms).
          for (const [group, micros] of Object.entries(result.cpu)) {
            if (micros > 0) yield* report({ name: `${prefix}.cpu_per_execution.${group}`, value: micros, unit: "µs" })
          }
        }
        const quiet = yield* measured(target, 1, idle)
        yield* report(ms(`scaling.${target.name}.idle.pickup_p50`, Percentile.of(quiet.pickups, 50)))
        yield* report(ms(`scaling.${target.name}.idle.pickup_p99`, Percentile.of(quiet.pickups, 99)))
        yield* report(ms(`scaling.${target.name}.idle.start_to_completed_p50`, Percentile.of(quiet.totals, 50)))
        yield* report(ms(`scaling.${target.name}.idle.start_to_completed_p99`, Percentile.of(quiet.totals, 99)))
      }
      yield* load("end")
      yield* report({ name: "scaling.goal.postgres.idle.pickup_p50, under", value: 5, unit: "ms" })
      yield* report({ name: "scaling.reference.graphile_worker.throughput, about", value: 3_000, unit: "jobs/s" })
      yield* report({ name: "scaling.reference.graphile_worker.add_to_start_p50, about", value: 2.1, unit: "ms" })
    }).pipe(Effect.scoped, Effect.provide(Logger.minimumLogLevel(LogLevel.Warning)))
}
