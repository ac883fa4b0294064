/**
 * `ExecutionStore` on PostgreSQL. A save is one `UPDATE` fenced by the lease token; a terminal
 * save clears the lease and inserts the webhook outbox entry, when there is one, in the same
 * statement (`WITH saved AS (UPDATE … RETURNING …) INSERT … SELECT … FROM saved`), so a finished
 * execution never lacks its webhook and a lost lease writes neither.
 */
import { Errors, type ExecutionQueue, type ExecutionRecord, ExecutionStore, type WebhookOutbox } from "@appexec/core"
import { Effect, Layer, Option } from "effect"
import { sql } from "kysely"
import { fromRow, toColumns } from "./internal/ExecutionRows.js"
import { WorkNotifier } from "./internal/WorkNotifier.js"
import { PostgresClient } from "./PostgresClient.js"

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
    const saved = client.execute("save execution", async (db) => {
      const update = db
        .updateTable("executions")
        .set({
          ...columns,
          ...(terminal ? { lease_worker: null, lease_token: null, lease_expires_at: null } : {})
        })
        .where("execution_id", "=", execution_id)
        .where("lease_token", "=", lease.token)
        .where("lease_worker", "=", lease.workerId)
      if (!(terminal && outbox !== undefined)) {
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
          "created_at"
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
              sql<number>`${outbox.createdAt}::bigint`.as("created_at")
            ])
        )
        .executeTakeFirst()
      return result.numInsertedOrUpdatedRows === undefined ? false : result.numInsertedOrUpdatedRows > 0n
    })
    return Effect.flatMap(saved, (ok) => (ok ? Effect.void : new Errors.LeaseLost({ executionId: record.executionId })))
  }

  const service: ExecutionStore.ExecutionStore["Type"] = {
    insert: Effect.fn("PostgresExecutionStore.insert")((record) =>
      client.execute("insert execution", async (db) => {
        await db.insertInto("executions").values(toColumns(record)).execute()
      }).pipe(Effect.zipRight(notifier.notify))
    ),
    get: Effect.fn("PostgresExecutionStore.get")((executionId) =>
      client
        .execute("get execution", (db) =>
          db.selectFrom("executions").selectAll().where("execution_id", "=", executionId).executeTakeFirst())
        .pipe(Effect.flatMap((row) => (row === undefined ? Effect.succeedNone : Effect.map(fromRow(row), Option.some))))
    ),
    save: Effect.fn("PostgresExecutionStore.save")(save)
  }
  return service
})

/** Layer of the store; needs the pool and the notifier (see `PostgresStorage`). */
export const layer = Layer.effect(ExecutionStore.ExecutionStore, make)
