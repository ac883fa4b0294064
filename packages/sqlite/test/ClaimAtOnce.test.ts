/**
 * Runs done inside their claim (`ExecutionQueue.ClaimOptions.runAtOnce`) on a SQLite file: the
 * claim reads what it takes, offers each queued execution to the worker, and writes the outcome
 * of what ran at once in place of the lease, in the claim's one write. Checked through the port,
 * and through a whole instance with its worker, against the rows as another connection reads them.
 */
import { Ids } from "@appexec/api"
import {
  Appexec,
  AppexecLayer,
  ExecutionEvents,
  ExecutionLifecycle,
  ExecutionQueue,
  ExecutionStore,
  IdGenerator,
  type NodeType
} from "@appexec/core"
import { SqliteStorage } from "@appexec/sqlite"
import { TestApps, TestOutboundHttp } from "@appexec/testing"
import { describe, expect, it } from "@effect/vitest"
import Database from "better-sqlite3"
import { Effect, Either, Layer, Logger, LogLevel, Option, Queue, type Scope } from "effect"
import { mkdtemp, rm } from "node:fs/promises"
import { tmpdir } from "node:os"
import { join } from "node:path"

/** A fresh database file, removed with the scope. */
const tempDb = Effect.map(
  Effect.acquireRelease(
    Effect.promise(() => mkdtemp(join(tmpdir(), "appexec-claim-at-once-"))),
    (dir) => Effect.promise(() => rm(dir, { recursive: true, force: true }))
  ),
  (dir) => join(dir, "appexec.db")
)

/** An instance on `filename`, its storage's services kept. */
const instanceOn = (filename: string, worker: boolean, nodes: ReadonlyArray<NodeType.NodeType<never>> = []) =>
  AppexecLayer.make({ nodes, worker, config: { pollInterval: 20 } }).pipe(
    Layer.provideMerge(SqliteStorage.layer({ filename })),
    Layer.provide(IdGenerator.IdGenerator.random),
    Layer.provide(TestOutboundHttp.layer),
    Layer.provide(Logger.minimumLogLevel(LogLevel.None))
  )

/**
 * `body` on an instance over a fresh file (with its worker or not), `app` imported: given the
 * file and the app's id.
 */
const onInstance = <A, E>(
  options: { readonly worker: boolean; readonly nodes?: ReadonlyArray<NodeType.NodeType<never>> },
  app: Parameters<Appexec.Appexec["Type"]["apps"]["import"]>[0],
  body: (
    filename: string,
    appId: string
  ) => Effect.Effect<A, E, Layer.Layer.Success<ReturnType<typeof instanceOn>> | Scope.Scope>
) =>
  Effect.flatMap(tempDb, (filename) =>
    Effect.gen(function*() {
      const { appId } = yield* (yield* Appexec.Appexec).apps.import(app)
      return yield* body(filename, appId)
    }).pipe(Effect.provide(instanceOn(filename, options.worker, options.nodes))))

/** The queue columns of each execution, as another connection reads them. */
const queueColumns = (filename: string) => {
  const db = new Database(filename, { readonly: true })
  try {
    return db.prepare(
      "SELECT execution_id, status, claims, attempts, lease_worker, lease_token, started_at, completed_at FROM executions ORDER BY seq"
    ).all() as Array<{
      execution_id: string
      status: string
      claims: number
      attempts: number
      lease_worker: string | null
      lease_token: number | null
      started_at: number | null
      completed_at: number | null
    }>
  } finally {
    db.close()
  }
}

/** Counts from now on the UPDATEs of each execution's row (a trigger, made by another connection). */
const countUpdates = (filename: string) => {
  const db = new Database(filename)
  try {
    db.exec(`CREATE TABLE test_updates (execution_id TEXT NOT NULL);
      CREATE TRIGGER test_count_updates AFTER UPDATE ON executions
      BEGIN INSERT INTO test_updates (execution_id) VALUES (new.execution_id); END;`)
  } finally {
    db.close()
  }
  return () => {
    const db = new Database(filename, { readonly: true })
    try {
      const rows = db.prepare("SELECT execution_id, count(*) AS n FROM test_updates GROUP BY execution_id")
        .all() as Array<
          { execution_id: string; n: number }
        >
      return new Map(rows.map((r) => [r.execution_id, r.n]))
    } finally {
      db.close()
    }
  }
}

/** Starts `n` executions of `app`, numbered prompts. */
const startMany = (appId: string, n: number) =>
  Effect.gen(function*() {
    const appexec = yield* Appexec.Appexec
    const { key } = yield* appexec.keys.create({ workspace: "at-once" })
    const principal = yield* appexec.keys.authenticate({ "x-api-key": key })
    return yield* Effect.forEach(
      Array.from({ length: n }, (_, i) => i),
      (i) => Effect.map(appexec.executions.start(principal, appId, { prompt: `p${i}` }), (s) => s.executionId)
    )
  })

/** What a worker would answer for a claim it ran at once: started at 1,000, completed at 2,000. */
const ranOf = (claim: ExecutionQueue.Claim): ExecutionQueue.RanAtOnce => {
  const started = Either.getOrThrow(ExecutionLifecycle.transition(claim.execution, { _tag: "Started", at: 1_000 }))
  const ended = Either.getOrThrow(
    ExecutionLifecycle.transition(started, {
      _tag: "Completed",
      at: 2_000,
      produced: [{ id: "result", type: "text", value: `done ${claim.execution.inputs["prompt"]}` }]
    })
  )
  return { started, ended }
}

describe("a claim that runs executions at once", () => {
  it.scopedLive("writes the outcome of what ran in place of the lease, and leases the rest", () =>
    onInstance({ worker: false }, TestApps.echo, (filename, appId) =>
      Effect.gen(function*() {
        const ids = yield* startMany(appId, 3)
        const queue = yield* ExecutionQueue.ExecutionQueue
        const offered: Array<ExecutionQueue.Claim> = []
        const claims = yield* queue.claimBatch("worker-a", 60_000, {
          limit: 10,
          start: ExecutionLifecycle.startedState(1_000),
          // The second one does not run at once: it is claimed as usual.
          runAtOnce: (claim) => {
            offered.push(claim)
            return claim.execution.executionId === ids[1] ? undefined : ranOf(claim)
          }
        })
        // Offered as the claim answers it: found queued, its first claim and attempt.
        expect(offered.map((c) => [c.execution.executionId, c.execution.status, c.started, c.lease.attempt])).toEqual(
          ids.map((id) => [id, "queued", true, 1])
        )
        expect(claims.map((c) => [c.execution.executionId, c.ranAtOnce?.ended.status])).toEqual([
          [ids[0], "completed"],
          [ids[1], undefined],
          [ids[2], "completed"]
        ])
        expect(claims.map((c) => [c.lease.workerId, c.lease.token, c.lease.attempt])).toEqual(
          ids.map(() => ["worker-a", 1, 1])
        )
        const ran = { status: "completed", lease_worker: null, lease_token: null, completed_at: 2_000 }
        expect(queueColumns(filename)).toEqual(
          ids.map((id, i) => ({
            execution_id: id,
            claims: 1,
            attempts: 1,
            started_at: 1_000,
            ...(i === 1
              ? { status: "running", lease_worker: "worker-a", lease_token: 1, completed_at: null }
              : ran)
          }))
        )
        const store = yield* ExecutionStore.ExecutionStore
        const first = Option.getOrThrow(yield* store.get(Ids.ExecutionId.make(ids[0]!)))
        expect([first.outputs[0]?.value, first.attempt]).toEqual(["done p0", 1])
        // What ran is not claimable again; what was leased is not either while its lease lives.
        expect(yield* queue.claimBatch("worker-b", 60_000, { limit: 10, runAtOnce: ranOf })).toEqual([])
      })))

  it.scopedLive("offers nothing it claims again: an execution whose worker was lost is leased as it was", () =>
    onInstance({ worker: false }, TestApps.echo, (filename, appId) =>
      Effect.gen(function*() {
        const [id] = yield* startMany(appId, 1)
        const queue = yield* ExecutionQueue.ExecutionQueue
        // A lease that has run out at once: the execution is running with no live lease.
        const first = yield* queue.claimBatch("lost", -1, { limit: 1, start: ExecutionLifecycle.startedState(1_000) })
        expect(first.map((c) => c.execution.executionId)).toEqual([id])
        let offered = 0
        const again = yield* queue.claimBatch("worker-b", 60_000, {
          limit: 10,
          start: ExecutionLifecycle.startedState(5_000),
          runAtOnce: (claim) => {
            offered += 1
            return ranOf(claim)
          }
        })
        expect(offered).toBe(0)
        expect(again.map((c) => [c.execution.status, c.started, c.lease.attempt, c.ranAtOnce])).toEqual([
          ["running", false, 2, undefined]
        ])
        expect(queueColumns(filename).map((r) => [r.status, r.lease_worker, r.lease_token, r.started_at])).toEqual([
          ["running", "worker-b", 2, 1_000]
        ])
      })))
})

describe("the worker on SQLite", () => {
  it.scopedLive("runs what answers at once inside its claim: stored in one write with no lease, announced running then completed", () =>
    onInstance({ worker: true }, TestApps.echo, (filename, appId) =>
      Effect.gen(function*() {
        const appexec = yield* Appexec.Appexec
        const transitions = yield* (yield* ExecutionEvents.ExecutionEvents).subscribe
        const updates = countUpdates(filename)
        const ids = yield* startMany(appId, 20)
        const done = yield* Effect.forEach(ids, (id) => appexec.executions.await(id), { concurrency: "unbounded" })
        expect(done.map((d) => [d.status, d.outputs[0]?.value])).toEqual(
          ids.map((_, i) => ["completed", `echo: p${i}`])
        )
        const rows = queueColumns(filename)
        expect(rows.map((r) => [r.status, r.claims, r.attempts, r.lease_worker, r.lease_token])).toEqual(
          ids.map(() => ["completed", 1, 1, null, null])
        )
        for (const row of rows) expect(row.completed_at).toBeGreaterThanOrEqual(row.started_at!)
        // One write each after the insert: the claim's, with the outcome.
        expect(ids.map((id) => updates().get(id))).toEqual(ids.map(() => 1))
        const announced = yield* Queue.takeAll(transitions)
        for (const id of ids) {
          expect([...announced].filter((r) => r.executionId === id).map((r) => r.status)).toEqual([
            "queued",
            "running",
            "completed"
          ])
        }
      })))

  it.scopedLive("takes up in the run's fiber a workflow begun in the claim and not done there: each node runs once", () => {
    const later = TestApps.later("5 millis")
    return onInstance(
      { worker: true, nodes: [later.node] },
      TestApps.laterApp,
      (filename, appId) =>
        Effect.gen(function*() {
          const appexec = yield* Appexec.Appexec
          const updates = countUpdates(filename)
          const ids = yield* startMany(appId, 4)
          const done = yield* Effect.forEach(ids, (id) => appexec.executions.await(id), { concurrency: "unbounded" })
          expect(done.map((d) => [d.status, d.outputs[0]?.value])).toEqual(
            ids.map((_, i) => ["completed", `echo: p${i}`])
          )
          expect(later.calls()).toBe(4)
          // Claimed with a lease, then saved by the run's fiber, which cleared it: two writes each.
          expect(queueColumns(filename).map((r) => [r.status, r.claims, r.lease_worker])).toEqual(
            ids.map(() => ["completed", 1, null])
          )
          expect(ids.map((id) => updates().get(id))).toEqual(ids.map(() => 2))
        })
    )
  })

  it.scopedLive("fails once an execution whose node throws as it is begun in the claim", () => {
    const throwing = TestApps.throwing()
    return onInstance(
      { worker: true, nodes: [throwing.node] },
      TestApps.throwsApp,
      (_, appId) =>
        Effect.gen(function*() {
          const [id] = yield* startMany(appId, 1)
          const done = yield* (yield* Appexec.Appexec).executions.await(id!)
          expect([done.status, done.errorMessage]).toEqual(["failed", "The execution failed unexpectedly."])
          expect(throwing.calls()).toBe(1)
        })
    )
  })
})
