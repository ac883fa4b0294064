/** appexec's side of the graphile benchmark: its drain and its add→start, with `appexec worker` processes. */
import { AppexecLayer, IdGenerator } from "@appexec/core"
import { NodeOutboundHttp } from "@appexec/platform-node"
import { PostgresClient, PostgresStorage } from "@appexec/postgres"
import { Duration, Effect, Layer, Option } from "effect"
import * as NoopApp from "../NoopApp.js"
import * as ProcessCpu from "../ProcessCpu.js"
import * as AppexecCommand from "../servers/appexec.js"
import * as PostgresServer from "../servers/postgres.js"
import * as TempDir from "../TempDir.js"
import * as Drains from "./Drains.js"
import { CONCURRENCY, COUNT, LATENCY_COUNT, WARMUP } from "./Sizes.js"

/** This process as appexec's API on `url` (no worker): it adds the executions. */
const api = (url: string) =>
  AppexecLayer.make({ worker: false, webhooks: false }).pipe(
    Layer.provideMerge(PostgresStorage.layer({ connectionString: url, poolSize: 16 })),
    Layer.provide(IdGenerator.IdGenerator.random),
    Layer.provide(NodeOutboundHttp.layer({ allowPrivateNetworks: true }))
  )

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
export const appexecDrain = (server: PostgresServer.Server, processes: number) =>
  Effect.scoped(Effect.gen(function*() {
    const url = yield* Drains.database(server)
    const counter = yield* Drains.counting(url)
    const { held, last, warmUp } = yield* Effect.gen(function*() {
      const { appexec, appId, principal } = yield* NoopApp.setUp
      yield* Effect.forEach(
        Array.from({ length: COUNT }, (_, i) => i),
        (i) => appexec.executions.start(principal, appId, { in: `${i}` }),
        { concurrency: 64, discard: true }
      )
      const { rows } = yield* Effect.promise(() => counter.query<{ n: string }>("SELECT max(seq) AS n FROM executions"))
      // Held while the worker processes start (their claims skip locked rows), the warm-up's too.
      const held = yield* Drains.hold(url, "SELECT seq FROM executions WHERE status = 'queued' FOR UPDATE")
      // Each process gets the warm-up graphile-worker's one process gets: its own hot code to compile.
      yield* Effect.forEach(
        Array.from({ length: WARMUP * processes }, (_, i) => i),
        (i) => appexec.executions.start(principal, appId, { in: `warm-up ${i}` }),
        { concurrency: 64, discard: true }
      )
      const warmUp = yield* Drains.hold(
        url,
        "SELECT seq FROM executions WHERE status = 'queued' FOR UPDATE SKIP LOCKED"
      )
      return { held, warmUp, last: Number(rows[0]!.n) }
    }).pipe(Effect.provide(api(url)))
    const children = yield* appexecWorkers(url, processes)
    const pids = children.flatMap((child) => child.pid ?? [])
    // The warm-up, once every process runs, woken as an insert would wake them.
    const channel = PostgresClient.workChannel("public")
    yield* Drains.release(warmUp, channel, "")
    yield* Drains.drained(
      counter,
      `SELECT count(*) - ${COUNT} AS n FROM executions WHERE status IN ('queued', 'running')`
    )
    yield* Drains.analyze(counter, "executions")
    const before = yield* PostgresServer.backendsCpu(url)
    const commitsBefore = yield* Drains.commits(counter)
    const cpuBefore = pids.map(ProcessCpu.ofProcess)
    const mainBefore = pids.map(ProcessCpu.ofMainThread)
    yield* Drains.statementsFrom(counter)
    yield* Drains.release(held, channel, "")
    const { asked, end } = yield* Drains.drained(
      counter,
      Drains.anyLeft("executions WHERE status IN ('queued', 'running')")
    )
    const workerCpu = pids.map((pid, i) => (ProcessCpu.ofProcess(pid) - cpuBefore[i]!) / COUNT)
    const mainThreadCpu = pids.map((pid, i) => (ProcessCpu.ofMainThread(pid) - mainBefore[i]!) / COUNT)
    const serverMicros = PostgresServer.cpuUsed(before, yield* PostgresServer.backendsCpu(url))
    yield* Drains.printStatements(counter, `appexec_${processes}`, COUNT)
    // Besides the counting's own, the holder's notification.
    const committed = yield* Drains.commitsSince(counter, commitsBefore, asked + 3)
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
    } satisfies Drains.Drain
  }))

/** Add→start of `LATENCY_COUNT` executions started one at a time with one idle worker process. */
export const appexecLatency = (server: PostgresServer.Server) =>
  Effect.scoped(Effect.gen(function*() {
    const url = yield* Drains.database(server)
    const counter = yield* Drains.connection(url)
    return yield* Effect.gen(function*() {
      const { appexec, appId, principal } = yield* NoopApp.setUp
      yield* appexecWorkers(url, 1)
      const latencies: Array<number> = []
      for (let i = 0; i < LATENCY_COUNT; i++) {
        const added = Drains.wallNow()
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
