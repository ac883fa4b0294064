/**
 * The worker's runs on a SQLite file, checked against the rows as another connection reads them:
 * each execution is written twice after its insert (the claim, which starts it, and its outcome,
 * which clears the lease), whatever its nodes, and the outcomes of a turn go in one write of the
 * group commit.
 */
import { Appexec, AppexecLayer, ExecutionEvents, IdGenerator, type NodeType } from "@appexec/core"
import { SqliteStorage } from "@appexec/sqlite"
import { TestApps, TestOutboundHttp } from "@appexec/testing"
import { describe, expect, it } from "@effect/vitest"
import Database from "better-sqlite3"
import { Effect, Layer, Logger, LogLevel, Queue, type Scope } from "effect"
import { mkdtemp, rm } from "node:fs/promises"
import { tmpdir } from "node:os"
import { join } from "node:path"

/** A fresh database file, removed with the scope. */
const tempDb = Effect.map(
  Effect.acquireRelease(
    Effect.promise(() => mkdtemp(join(tmpdir(), "appexec-worker-runs-"))),
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

describe("the worker on SQLite", () => {
  it.scopedLive("claims, then saves the outcome with no lease left: two writes after the insert, announced queued, running, completed", () =>
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
        // Two writes each after the insert: the claim (the lease), and the start with the outcome.
        expect(ids.map((id) => updates().get(id))).toEqual(ids.map(() => 2))
        const announced = yield* Queue.takeAll(transitions)
        for (const id of ids) {
          expect([...announced].filter((r) => r.executionId === id).map((r) => r.status)).toEqual([
            "queued",
            "running",
            "completed"
          ])
        }
      })))

  it.scopedLive("runs a node that answers later the same way: each node runs once; its start is written before its end", () => {
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
          // Claimed with a lease, its start saved while the node works, then its end, which
          // cleared the lease: three writes each (a run that ends in its first turn makes two).
          expect(queueColumns(filename).map((r) => [r.status, r.claims, r.lease_worker])).toEqual(
            ids.map(() => ["completed", 1, null])
          )
          expect(ids.map((id) => updates().get(id))).toEqual(ids.map(() => 3))
        })
    )
  })

  it.scopedLive("fails once an execution whose node throws", () => {
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
