/**
 * `ExecutionStore` on PostgreSQL. A save is one `UPDATE` fenced by the lease token; a terminal
 * save clears the lease and inserts the webhook outbox entry, when there is one, in the same
 * statement (`WITH saved AS (UPDATE … RETURNING …) INSERT … SELECT … FROM saved`), so a finished
 * execution never lacks its webhook and a lost lease writes neither. A cancel of a queued
 * execution is the same statement fenced by "still queued, no live lease". An idempotent start
 * takes its key with `INSERT … ON CONFLICT DO UPDATE … WHERE expired` in the transaction that
 * inserts the execution: a second start with the key waits for the first to commit, then finds it.
 */
import { ExecutionId } from "@appexec/api/Ids"
import { Errors, type ExecutionQueue, type ExecutionRecord, ExecutionStore, type WebhookOutbox } from "@appexec/core"
import { Effect, Layer, Option } from "effect"
import { type Kysely, sql, type UpdateQueryBuilder, type UpdateResult } from "kysely"
import { fromRow, toColumns } from "./internal/ExecutionRows.js"
import type { Tables } from "./internal/Tables.js"
import { WorkNotifier } from "./internal/WorkNotifier.js"
import { PostgresClient } from "./PostgresClient.js"

const FINISHED = [sql.lit("completed"), sql.lit("failed")]

type ExecutionUpdate = UpdateQueryBuilder<Tables, "executions", "executions", UpdateResult>

/** Runs `update`, and inserts `outbox` (when given) in the same statement if it changed a row; whether it did. */
const updateWithOutbox = async (db: Kysely<Tables>, update: ExecutionUpdate, outbox?: WebhookOutbox.OutboxEntry) => {
  if (outbox === undefined) {
    const result = await update.executeTakeFirst()
    return result.numUpdatedRows > 0n
  }
  const result = await db
    .with("saved", () => update.returning("execution_id"))
    .insertInto("webhook_outbox")
    .columns([
      "delivery_id",
      "execution_id",
      "user_id",
      "url",
      "status",
      "next_attempt_at",
      "attempts",
      "created_at",
      "trace_parent"
    ])
    .expression((eb) =>
      eb
        .selectFrom("saved")
        .select([
          eb.val(outbox.deliveryId).as("delivery_id"),
          "saved.execution_id",
          eb.val(outbox.userId).as("user_id"),
          eb.val(outbox.url).as("url"),
          eb.val(outbox.status).as("status"),
          sql<number>`${outbox.nextAttemptAt}::bigint`.as("next_attempt_at"),
          sql<string>`${JSON.stringify(outbox.attempts)}::jsonb`.as("attempts"),
          sql<number>`${outbox.createdAt}::bigint`.as("created_at"),
          sql<string | null>`${outbox.traceParent ?? null}::text`.as("trace_parent")
        ])
    )
    .executeTakeFirst()
  return (result.numInsertedOrUpdatedRows ?? 0n) > 0n
}

/** The store over the instance's pool; inserts wake idle workers in every process (`WorkNotifier`). */
export const make = Effect.gen(function*() {
  const client = yield* PostgresClient
  const notifier = yield* WorkNotifier

  const save = (
    record: ExecutionRecord.ExecutionRecord,
    lease: ExecutionQueue.Lease,
    outbox?: WebhookOutbox.OutboxEntry
  ) => {
    const terminal = record.status === "completed" || record.status === "failed"
    const { execution_id, ...columns } = toColumns(record)
    const saved = client.execute("save execution", (db) =>
      updateWithOutbox(
        db,
        db
          .updateTable("executions")
          .set({
            ...columns,
            ...(terminal ? { lease_worker: null, lease_token: null, lease_expires_at: null } : {})
          })
          .where("execution_id", "=", execution_id)
          .where("lease_token", "=", lease.token)
          .where("lease_worker", "=", lease.workerId),
        terminal ? outbox : undefined
      ))
    return Effect.flatMap(saved, (ok) => (ok ? Effect.void : new Errors.LeaseLost({ executionId: record.executionId })))
  }

  const service: ExecutionStore.ExecutionStore["Type"] = {
    insert: Effect.fn("PostgresExecutionStore.insert")((record) =>
      client.execute("insert execution", async (db) => {
        await db.insertInto("executions").values(toColumns(record)).execute()
      }).pipe(Effect.zipRight(notifier.notify))
    ),
    insertIdempotent: Effect.fn("PostgresExecutionStore.insertIdempotent")((record, key, now) =>
      client.transaction("insert execution with idempotency key", async (trx): Promise<
        ExecutionStore.IdempotentInsert
      > => {
        // Takes the key unless it is held unexpired; a concurrent start with the key waits here
        // until this transaction ends, then finds the key held.
        const taken = await trx
          .insertInto("idempotency_keys")
          .values({
            workspace_id: key.workspaceId,
            key: key.key,
            fingerprint: key.fingerprint,
            execution_id: record.executionId,
            expires_at: key.expiresAt
          })
          .onConflict((oc) =>
            oc
              .columns(["workspace_id", "key"])
              .doUpdateSet((eb) => ({
                fingerprint: eb.ref("excluded.fingerprint"),
                execution_id: eb.ref("excluded.execution_id"),
                expires_at: eb.ref("excluded.expires_at")
              }))
              .where("idempotency_keys.expires_at", "<=", now)
          )
          .returning("execution_id")
          .executeTakeFirst()
        if (taken === undefined) {
          const held = await trx
            .selectFrom("idempotency_keys")
            .select(["execution_id", "fingerprint"])
            .where("workspace_id", "=", key.workspaceId)
            .where("key", "=", key.key)
            .executeTakeFirstOrThrow()
          return { _tag: "Existing", executionId: ExecutionId.make(held.execution_id), fingerprint: held.fingerprint }
        }
        await trx.insertInto("executions").values(toColumns(record)).execute()
        return { _tag: "Inserted" }
      }).pipe(Effect.tap((result) => (result._tag === "Inserted" ? notifier.notify : Effect.void)))
    ),
    get: Effect.fn("PostgresExecutionStore.get")((executionId) =>
      client
        .execute("get execution", (db) =>
          db.selectFrom("executions").selectAll().where("execution_id", "=", executionId).executeTakeFirst())
        .pipe(Effect.flatMap((row) => (row === undefined ? Effect.succeedNone : Effect.map(fromRow(row), Option.some))))
    ),
    save: Effect.fn("PostgresExecutionStore.save")(save),
    finishedAmong: Effect.fn("PostgresExecutionStore.finishedAmong")((executionIds) =>
      executionIds.length === 0
        ? Effect.succeed([])
        : client
          .execute("finished among", (db) =>
            db
              .selectFrom("executions")
              .select("execution_id")
              .where(sql<boolean>`execution_id = any(${[...executionIds]}::text[])`)
              .where("status", "in", [sql.lit("completed"), sql.lit("failed")])
              .execute())
          .pipe(Effect.map((rows) => rows.map((row) => ExecutionId.make(row.execution_id))))
    ),
    list: Effect.fn("PostgresExecutionStore.list")(({ limit, status, workspaceId }) =>
      client
        .execute("list executions", (db) => {
          let query = db.selectFrom("executions").selectAll().orderBy("seq", "desc").limit(limit)
          if (workspaceId !== undefined) query = query.where("workspace_id", "=", workspaceId)
          if (status !== undefined) query = query.where("status", "=", status)
          return query.execute()
        })
        .pipe(Effect.flatMap((rows) => Effect.forEach(rows, fromRow)))
    ),
    finishedBefore: Effect.fn("PostgresExecutionStore.finishedBefore")((cutoff, limit) =>
      client
        .execute("find expired executions", (db) =>
          db
            .selectFrom("executions")
            .select("execution_id")
            .where("status", "in", FINISHED)
            .where("completed_at", "<", cutoff)
            .orderBy("completed_at")
            .limit(limit)
            .execute())
        .pipe(Effect.map((rows) => rows.map((row) => ExecutionId.make(row.execution_id))))
    ),
    deleteFinished: Effect.fn("PostgresExecutionStore.deleteFinished")((executionIds) =>
      executionIds.length === 0
        ? Effect.succeed(0)
        : client.transaction("delete executions", async (trx) => {
          const ids = [...executionIds]
          const finished = trx
            .selectFrom("executions")
            .select("execution_id")
            .where("execution_id", "in", ids)
            .where("status", "in", FINISHED)
          await trx.deleteFrom("webhook_outbox").where("execution_id", "in", finished).execute()
          const deleted = await trx
            .deleteFrom("executions")
            .where("execution_id", "in", ids)
            .where("status", "in", FINISHED)
            .executeTakeFirst()
          return Number(deleted.numDeletedRows)
        })
    ),
    countOpen: client
      .execute("count open executions", (db) =>
        db
          .selectFrom("executions")
          .select(["status", (eb) => eb.fn.countAll<string>().as("n")])
          .where("status", "in", [sql.lit("queued"), sql.lit("running")])
          .groupBy("status")
          .execute())
      .pipe(
        Effect.map((rows) => ({
          queued: Number(rows.find((r) => r.status === "queued")?.n ?? 0),
          running: Number(rows.find((r) => r.status === "running")?.n ?? 0)
        }))
      ),
    cancelQueued: Effect.fn("PostgresExecutionStore.cancelQueued")((record, now, outbox) => {
      const { execution_id, ...columns } = toColumns(record)
      return client.execute("cancel queued execution", (db) =>
        updateWithOutbox(
          db,
          db
            .updateTable("executions")
            .set({ ...columns, lease_worker: null, lease_token: null, lease_expires_at: null })
            .where("execution_id", "=", execution_id)
            .where("status", "=", sql.lit("queued"))
            .where((w) => w.or([w("lease_expires_at", "is", null), w("lease_expires_at", "<=", now)])),
          outbox
        ))
    }),
    requestCancel: Effect.fn("PostgresExecutionStore.requestCancel")((executionId, at) =>
      client.execute("request cancel", async (db) => {
        const result = await db
          .updateTable("executions")
          .set({ cancel_requested_at: at })
          .where("execution_id", "=", executionId)
          .where("status", "in", [sql.lit("queued"), sql.lit("running")])
          .executeTakeFirst()
        return result.numUpdatedRows > 0n
      })
    )
  }
  return service
})

/** Layer of the store; needs the pool and the notifier (see `PostgresStorage`). */
export const layer = Layer.effect(ExecutionStore.ExecutionStore, make)
