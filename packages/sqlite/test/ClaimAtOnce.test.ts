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
  NodeType
} from "@appexec/core"
import { SqliteStorage } from "@appexec/sqlite"
import { TestOutboundHttp } from "@appexec/testing"
import { describe, expect, it } from "@effect/vitest"
import Database from "better-sqlite3"
import { Effect, Either, Layer, Logger, LogLevel, Option, Queue, Schema } from "effect"
import { mkdtemp, rm } from "node:fs/promises"
import { tmpdir } from "node:os"
import { join } from "node:path"

/** input → output: both answer at once. */
const echo = {
  name: "Echo",
  public: true,
  nodes: [
    { id: "prompt", type: "input.text", label: "Prompt", config: { name: "prompt", required: true } },
    { id: "result", type: "output.text", label: "Result" }
  ],
  edges: [{ source: "prompt", target: "result" }]
}

/** A fresh database file, removed with the scope. */
const tempDb = Effect.map(
  Effect.acquireRelease(
    Effect.promise(() => mkdtemp(join(tmpdir(), "appexec-claim-at-once-"))),
    (dir) => Effect.promise(() => rm(dir, { recursive: true, force: true }))
  ),
  (dir) => join(dir, "appexec.db")
)

/** An instance on `filename`, its storage's services kept. */
const instanceOn = (filename: string, options: { worker: boolean; nodes?: ReadonlyArray<NodeType.Any> }) =>
  AppexecLayer.make({ nodes: options.nodes ?? [], worker: options.worker, config: { pollInterval: 20 } }).pipe(
    Layer.provideMerge(SqliteStorage.layer({ filename })),
    Layer.provide(IdGenerator.IdGenerator.random),
    Layer.provide(TestOutboundHttp.layer),
    Layer.provide(Logger.minimumLogLevel(LogLevel.None))
  )

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
    Effect.gen(function*() {
      const filename = yield* tempDb
      yield* Effect.gen(function*() {
        const appexec = yield* Appexec.Appexec
        const app = yield* appexec.apps.import(echo)
        const ids = yield* startMany(app.appId, 3)
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
        const rows = queueColumns(filename)
        expect(rows).toEqual([
          {
            execution_id: ids[0],
            status: "completed",
            claims: 1,
            attempts: 1,
            lease_worker: null,
            lease_token: null,
            started_at: 1_000,
            completed_at: 2_000
          },
          {
            execution_id: ids[1],
            status: "running",
            claims: 1,
            attempts: 1,
            lease_worker: "worker-a",
            lease_token: 1,
            started_at: 1_000,
            completed_at: null
          },
          {
            execution_id: ids[2],
            status: "completed",
            claims: 1,
            attempts: 1,
            lease_worker: null,
            lease_token: null,
            started_at: 1_000,
            completed_at: 2_000
          }
        ])
        const store = yield* ExecutionStore.ExecutionStore
        const first = Option.getOrThrow(yield* store.get(Ids.ExecutionId.make(ids[0]!)))
        expect([first.outputs[0]?.value, first.attempt]).toEqual(["done p0", 1])
        // What ran is not claimable again; what was leased is not either while its lease lives.
        expect(yield* queue.claimBatch("worker-b", 60_000, { limit: 10, runAtOnce: ranOf })).toEqual([])
      }).pipe(Effect.provide(instanceOn(filename, { worker: false })))
    }))

  it.scopedLive("offers nothing it claims again: an execution whose worker was lost is leased as it was", () =>
    Effect.gen(function*() {
      const filename = yield* tempDb
      yield* Effect.gen(function*() {
        const appexec = yield* Appexec.Appexec
        const app = yield* appexec.apps.import(echo)
        const [id] = yield* startMany(app.appId, 1)
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
      }).pipe(Effect.provide(instanceOn(filename, { worker: false })))
    }))
})

describe("the worker on SQLite", () => {
  it.scopedLive("runs what answers at once inside its claim: stored in one write with no lease, announced running then completed", () =>
    Effect.gen(function*() {
      const filename = yield* tempDb
      yield* Effect.gen(function*() {
        const appexec = yield* Appexec.Appexec
        const app = yield* appexec.apps.import(echo)
        const transitions = yield* (yield* ExecutionEvents.ExecutionEvents).subscribe
        const updates = countUpdates(filename)
        const ids = yield* startMany(app.appId, 20)
        const done = yield* Effect.forEach(ids, (id) => appexec.executions.await(id), { concurrency: "unbounded" })
        expect(done.map((d) => [d.status, d.outputs[0]?.value])).toEqual(ids.map((_, i) => ["completed", `p${i}`]))
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
      }).pipe(Effect.provide(instanceOn(filename, { worker: true })))
    }))

  it.scopedLive("takes up in the run's fiber a workflow begun in the claim and not done there: each node runs once", () => {
    let calls = 0
    const later = NodeType.defineNode({
      type: "test.later",
      description: "Answers a little later",
      role: "process",
      inputs: { min: 1, max: 1 },
      config: Schema.Struct({}),
      run: ({ upstream }) => {
        calls += 1
        return Effect.as(Effect.sleep("5 millis"), upstream[0]!.value)
      }
    })
    return Effect.gen(function*() {
      const filename = yield* tempDb
      yield* Effect.gen(function*() {
        const appexec = yield* Appexec.Appexec
        const app = yield* appexec.apps.import({
          name: "Later",
          public: true,
          nodes: [
            { id: "prompt", type: "input.text", label: "Prompt", config: { name: "prompt", required: true } },
            { id: "echo", type: "text.template", config: { template: "echo: {{prompt}}" } },
            { id: "later", type: "test.later" },
            { id: "result", type: "output.text", label: "Result" }
          ],
          edges: [
            { source: "prompt", target: "echo" },
            { source: "echo", target: "later" },
            { source: "later", target: "result" }
          ]
        })
        const updates = countUpdates(filename)
        const ids = yield* startMany(app.appId, 4)
        const done = yield* Effect.forEach(ids, (id) => appexec.executions.await(id), { concurrency: "unbounded" })
        expect(done.map((d) => [d.status, d.outputs[0]?.value])).toEqual(
          ids.map((_, i) => ["completed", `echo: p${i}`])
        )
        expect(calls).toBe(4)
        // Claimed with a lease, then saved by the run's fiber, which cleared it: two writes each.
        expect(queueColumns(filename).map((r) => [r.status, r.claims, r.lease_worker])).toEqual(
          ids.map(() => ["completed", 1, null])
        )
        expect(ids.map((id) => updates().get(id))).toEqual(ids.map(() => 2))
      }).pipe(Effect.provide(instanceOn(filename, { worker: true, nodes: [later] })))
    })
  })

  it.scopedLive("fails once an execution whose node throws as it is begun in the claim", () => {
    let calls = 0
    const throws = NodeType.defineNode({
      type: "test.throws",
      description: "Throws instead of answering",
      role: "process",
      inputs: { min: 1, max: 1 },
      config: Schema.Struct({}),
      run: () => {
        calls += 1
        throw new Error("a bug in the node type")
      }
    })
    return Effect.gen(function*() {
      const filename = yield* tempDb
      yield* Effect.gen(function*() {
        const appexec = yield* Appexec.Appexec
        const app = yield* appexec.apps.import({
          name: "Throws",
          public: true,
          nodes: [
            { id: "prompt", type: "input.text", label: "Prompt", config: { name: "prompt", required: true } },
            { id: "bad", type: "test.throws" },
            { id: "result", type: "output.text", label: "Result" }
          ],
          edges: [{ source: "prompt", target: "bad" }, { source: "bad", target: "result" }]
        })
        const [id] = yield* startMany(app.appId, 1)
        const done = yield* appexec.executions.await(id!)
        expect([done.status, done.errorMessage]).toEqual(["failed", "The execution failed unexpectedly."])
        expect(calls).toBe(1)
      }).pipe(Effect.provide(instanceOn(filename, { worker: true, nodes: [throws] })))
    })
  })
})
