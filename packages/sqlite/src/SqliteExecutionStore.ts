/**
 * `ExecutionStore` on SQLite. A save is one `UPDATE` fenced by the lease token; a terminal save
 * clears the lease, and inserts the webhook outbox entry, when there is one, in the same
 * `BEGIN IMMEDIATE` transaction.
 */
import { Errors, ExecutionStore } from "@appexec/core"
import { Effect, Layer } from "effect"
import { fromRow, toColumns } from "./internal/ExecutionRows.js"
import { WorkSignal } from "./internal/WorkSignal.js"
import { SqliteClient } from "./SqliteClient.js"

/** The store over the instance's connection; inserts wake this process's idle workers. */
export const make = Effect.gen(function* () {
  const client = yield* SqliteClient
  const signal = yield* WorkSignal
  const db = client.builder

  const service: ExecutionStore.ExecutionStore["Type"] = {
    insert: (record) =>
      client
        .execute("insert execution", (c) => c.run(db.insertInto("executions").values(toColumns(record))))
        .pipe(Effect.zipRight(signal.notify)),
    get: (executionId) =>
      client
        .execute("get execution", (c) =>
          c.get(db.selectFrom("executions").selectAll().where("execution_id", "=", executionId))
        )
        .pipe(Effect.flatMap((row) => (row === undefined ? Effect.succeedNone : Effect.asSome(fromRow(row))))),
    save: (record, lease, outbox) =>
      Effect.gen(function* () {
        const terminal = record.status === "completed" || record.status === "failed"
        const { execution_id: _, ...columns } = toColumns(record)
        // Only a save that also writes an outbox entry needs a transaction; a lone UPDATE is atomic.
        const write = terminal && outbox !== undefined ? client.transaction : client.execute
        const saved = yield* write("save execution", (c) => {
          const changed = c.run(
            db
              .updateTable("executions")
              .set(terminal ? { ...columns, lease_worker: null, lease_token: null, lease_expires_at: null } : columns)
              .where("execution_id", "=", record.executionId)
              .where("lease_token", "=", lease.token)
              .where("lease_worker", "=", lease.workerId)
          )
          if (changed === 0) return false
          if (terminal && outbox !== undefined) {
            c.run(
              db.insertInto("webhook_outbox").values({
                delivery_id: outbox.deliveryId,
                execution_id: outbox.executionId,
                user_id: outbox.userId,
                url: outbox.url,
                status: outbox.status,
                next_attempt_at: outbox.nextAttemptAt,
                attempts: JSON.stringify(outbox.attempts),
                created_at: outbox.createdAt
              })
            )
          }
          return true
        })
        if (!saved) return yield* new Errors.LeaseLost({ executionId: record.executionId })
      })
  }
  return service
})

/** Layer of the store; needs the connection and the work signal (see `SqliteStorage`). */
export const layer = Layer.effect(ExecutionStore.ExecutionStore, make)

