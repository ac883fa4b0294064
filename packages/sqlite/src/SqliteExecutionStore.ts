/**
 * `ExecutionStore` on SQLite: the dialect-neutral reads of `@appexec/sql` (`SqlExecutionStore`)
 * and SQLite's writes. A save is one `UPDATE` fenced by the lease token; a terminal save clears
 * the lease, and inserts the webhook outbox entry, when there is one, in the same `BEGIN
 * IMMEDIATE` transaction. Inserts and saves are group-committed (`SqliteClient.batched`); every
 * statement is compiled once (`PreparedQuery`).
 */
import { ExecutionId } from "@appexec/api/Ids"
import { Errors, type ExecutionQueue, type ExecutionRecord, ExecutionStore, type WebhookOutbox } from "@appexec/core"
import { ExecutionRows, PreparedQuery, SqlExecutionStore } from "@appexec/sql"
import { Effect, Layer } from "effect"
import { WorkSignal } from "./internal/WorkSignal.js"
import * as SqliteClient from "./SqliteClient.js"

const { toColumns } = ExecutionRows

type Columns = ReturnType<typeof toColumns>
type Saved = Pick<Columns, "execution_id" | "status" | "outputs" | "error_message" | "started_at" | "completed_at"> & {
  readonly lease_token: number
  readonly lease_worker: string
}
type OutboxColumns = Omit<WebhookOutbox.OutboxEntry, "attempts" | "traceParent" | "event"> & {
  readonly attempts: string
  readonly traceParent: string | null
  readonly event: string | null
}

/** The store over the instance's connection; inserts wake this process's idle workers. */
export const make = Effect.gen(function*() {
  const client = yield* SqliteClient.SqliteClient
  const signal = yield* WorkSignal
  const neutral = yield* SqlExecutionStore.make
  const db = client.builder

  /** Every column of an execution but its id, as parameters. */
  const stored = (p: PreparedQuery.Param<Columns>) => ({
    workflow_id: p("workflow_id"),
    app_id: p("app_id"),
    workspace_id: p("workspace_id"),
    user_id: p("user_id"),
    status: p("status"),
    inputs: p("inputs"),
    outputs: p("outputs"),
    error_message: p("error_message"),
    webhook_url: p("webhook_url"),
    created_at: p("created_at"),
    started_at: p("started_at"),
    completed_at: p("completed_at"),
    trace_parent: p("trace_parent"),
    webhook_events: p("webhook_events"),
    priority: p("priority"),
    queue_at: p("queue_at")
  })
  const insert = PreparedQuery.make((p: PreparedQuery.Param<Columns>) =>
    db.insertInto("executions").values({ execution_id: p("execution_id"), ...stored(p) })
  )
  /**
   * The fenced UPDATE of a save; a terminal save also clears the lease. It sets only what a
   * transition changes: the other columns keep the values of the insert, so no foreign key is
   * checked again and no index over them is rewritten.
   */
  const update = (terminal: boolean) =>
    PreparedQuery.make((p: PreparedQuery.Param<Saved>) =>
      db
        .updateTable("executions")
        .set({
          status: p("status"),
          outputs: p("outputs"),
          error_message: p("error_message"),
          started_at: p("started_at"),
          completed_at: p("completed_at"),
          ...(terminal ? { lease_worker: null, lease_token: null, lease_expires_at: null } : {})
        })
        .where("execution_id", "=", p("execution_id"))
        .where("lease_token", "=", p("lease_token"))
        .where("lease_worker", "=", p("lease_worker"))
    )
  const saveRunning = update(false)
  const saveTerminal = update(true)
  const insertOutbox = PreparedQuery.make((p: PreparedQuery.Param<OutboxColumns>) =>
    db.insertInto("webhook_outbox").values({
      delivery_id: p("deliveryId"),
      execution_id: p("executionId"),
      user_id: p("userId"),
      url: p("url"),
      status: p("status"),
      next_attempt_at: p("nextAttemptAt"),
      attempts: p("attempts"),
      created_at: p("createdAt"),
      trace_parent: p("traceParent"),
      event: p("event")
    })
  )

  /** A cancel of an execution no worker holds: the fenced UPDATE is "still queued, no live lease". */
  const cancelQueuedUpdate = PreparedQuery.make((p: PreparedQuery.Param<Columns & { readonly now: number }>) =>
    db
      .updateTable("executions")
      .set({ ...stored(p), lease_worker: null, lease_token: null, lease_expires_at: null })
      .where("execution_id", "=", p("execution_id"))
      .where("status", "=", "queued")
      .where((w) => w.or([w("lease_expires_at", "is", null), w("lease_expires_at", "<=", p("now"))]))
  )
  type KeyColumns = {
    readonly workspace_id: string
    readonly key: string
    readonly fingerprint: string
    readonly execution_id: string
    readonly expires_at: number
  }
  const findKey = PreparedQuery.make((p: PreparedQuery.Param<{ workspaceId: string; key: string; now: number }>) =>
    db
      .selectFrom("idempotency_keys")
      .select(["execution_id", "fingerprint"])
      .where("workspace_id", "=", p("workspaceId"))
      .where("key", "=", p("key"))
      .where("expires_at", ">", p("now"))
  )
  const putKey = PreparedQuery.make((p: PreparedQuery.Param<KeyColumns>) =>
    db
      .insertInto("idempotency_keys")
      .values({
        workspace_id: p("workspace_id"),
        key: p("key"),
        fingerprint: p("fingerprint"),
        execution_id: p("execution_id"),
        expires_at: p("expires_at")
      })
      .onConflict((oc) =>
        oc.columns(["workspace_id", "key"]).doUpdateSet({
          fingerprint: p("fingerprint"),
          execution_id: p("execution_id"),
          expires_at: p("expires_at")
        })
      )
  )

  /** The INSERT of an outbox entry. */
  const outboxRow = (outbox: WebhookOutbox.OutboxEntry) =>
    insertOutbox.bind({
      ...outbox,
      attempts: JSON.stringify(outbox.attempts),
      traceParent: outbox.traceParent ?? null,
      event: outbox.event ?? null
    })

  /** The statements of one save, on the connection of a write; false when the lease is no longer current. */
  const write = (
    c: SqliteClient.Connection,
    record: ExecutionRecord.ExecutionRecord,
    lease: ExecutionQueue.Lease,
    outbox: WebhookOutbox.OutboxEntry | undefined
  ): boolean => {
    const terminal = record.status === "completed" || record.status === "failed"
    const params: Saved = {
      execution_id: record.executionId,
      status: record.status,
      outputs: JSON.stringify(record.outputs),
      error_message: record.errorMessage,
      started_at: record.startedAt,
      completed_at: record.completedAt,
      lease_token: lease.token,
      lease_worker: lease.workerId
    }
    if (c.run((terminal ? saveTerminal : saveRunning).bind(params)) === 0) return false
    if (terminal && outbox !== undefined) {
      c.run(outboxRow(outbox))
    }
    return true
  }

  const save = (
    record: ExecutionRecord.ExecutionRecord,
    lease: ExecutionQueue.Lease,
    outbox?: WebhookOutbox.OutboxEntry
  ) =>
    // Group-committed: saves arriving together share one transaction; each is atomic on its own.
    Effect.flatMap(
      client.batched("save execution", (c) => write(c, record, lease, outbox)),
      (ok) => (ok ? Effect.void : new Errors.LeaseLost({ executionId: record.executionId }))
    )

  // Many saves as one write of the group commit: one wait for them all.
  const saveAll = ExecutionStore.makeSaveAll(
    save,
    (saves) => client.batched("save executions", (c) => saves.map((s) => write(c, s.record, s.lease, s.outbox)))
  )

  const service: ExecutionStore.ExecutionStore["Type"] = {
    ...neutral,
    insert: (record) =>
      client.batched("insert execution", (c) => c.run(insert.bind(toColumns(record)))).pipe(
        Effect.zipRight(signal.notify)
      ),
    save,
    saveAll,
    insertIdempotent: Effect.fn("SqliteExecutionStore.insertIdempotent")((record, key, now) =>
      // One BEGIN IMMEDIATE transaction: the write lock is held from the lookup to the insert, so
      // two starts with one key (in one process or two) record one execution.
      client.transaction("insert execution with idempotency key", (c): ExecutionStore.IdempotentInsert => {
        const held = c.get(findKey.bind({ workspaceId: key.workspaceId, key: key.key, now }))
        if (held !== undefined) {
          return {
            _tag: "Existing",
            executionId: ExecutionId.make(held.execution_id),
            fingerprint: held.fingerprint
          }
        }
        c.run(insert.bind(toColumns(record)))
        c.run(putKey.bind({
          workspace_id: key.workspaceId,
          key: key.key,
          fingerprint: key.fingerprint,
          execution_id: record.executionId,
          expires_at: key.expiresAt
        }))
        return { _tag: "Inserted" }
      }).pipe(Effect.tap((result) => (result._tag === "Inserted" ? signal.notify : Effect.void)))
    ),
    cancelQueued: Effect.fn("SqliteExecutionStore.cancelQueued")((record, now, outbox) =>
      client.transaction("cancel queued execution", (c) => {
        if (c.run(cancelQueuedUpdate.bind({ ...toColumns(record), now })) === 0) return false
        if (outbox !== undefined) {
          c.run(outboxRow(outbox))
        }
        return true
      })
    )
  }
  return service
})

/** Layer of the store; needs the connection and the work signal (see `SqliteStorage`). */
export const layer = Layer.effect(ExecutionStore.ExecutionStore, make)
