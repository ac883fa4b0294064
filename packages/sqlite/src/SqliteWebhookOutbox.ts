/**
 * `WebhookOutbox` on SQLite. Entries are inserted by `SqliteExecutionStore.save` with the
 * terminal transition; here they are claimed for delivery and their attempts recorded.
 */
import { type Errors, WebhookOutbox } from "@appexec/core"
import { Clock, Effect, Layer } from "effect"
import { type Selectable, sql } from "kysely"
import { decode, parseJson } from "./internal/RowDecoding.js"
import type { WebhookOutboxTable } from "./internal/Tables.js"
import { SqliteClient } from "./SqliteClient.js"

type OutboxRow = Selectable<WebhookOutboxTable>

const decodeEntry = decode(WebhookOutbox.OutboxEntry, "read webhook outbox")

const fromRow = (row: OutboxRow): Effect.Effect<WebhookOutbox.OutboxEntry, Errors.StorageError> =>
  Effect.flatMap(parseJson(row.attempts, "read webhook outbox"), (attempts) =>
    decodeEntry({
      deliveryId: row.delivery_id,
      executionId: row.execution_id,
      userId: row.user_id,
      url: row.url,
      status: row.status,
      nextAttemptAt: row.next_attempt_at,
      attempts,
      createdAt: row.created_at,
      ...(row.trace_parent === null ? {} : { traceParent: row.trace_parent })
    }))

/** The outbox over the instance's connection. */
export const make = Effect.gen(function*() {
  const client = yield* SqliteClient
  const db = client.builder

  const service: WebhookOutbox.WebhookOutbox["Type"] = {
    claimDue: Effect.fn("SqliteWebhookOutbox.claimDue")((limit, leaseMs) =>
      Effect.gen(function*() {
        const now = yield* Clock.currentTimeMillis
        const rows = yield* client.transaction("claim due webhooks", (c) => {
          const due = c.all(
            db
              .selectFrom("webhook_outbox")
              .selectAll()
              // A literal, not a parameter: only then can SQLite use the partial index `webhook_outbox_due`.
              .where("status", "=", sql.lit("pending"))
              .where("next_attempt_at", "<=", now)
              .orderBy("next_attempt_at")
              .orderBy("created_at")
              .orderBy("seq")
              .limit(limit)
          )
          if (due.length > 0) {
            c.run(
              db
                .updateTable("webhook_outbox")
                .set({ next_attempt_at: now + leaseMs })
                .where(
                  "seq",
                  "in",
                  due.map((row) => row.seq)
                )
            )
          }
          return due
        })
        // Handed out with the lease end they now carry: it is the claim that fences `recordAttempt`.
        return yield* Effect.forEach(rows, (row) => fromRow({ ...row, next_attempt_at: now + leaseMs }))
      })
    ),
    recordAttempt: Effect.fn("SqliteWebhookOutbox.recordAttempt")((claim, attempt, next) =>
      client.execute("record webhook attempt", (c) => {
        // Appended inside SQLite, and only while the claim is current: a later claim moved
        // `next_attempt_at` past this lease end, and a recorded attempt moved it or ended delivery.
        const changed = c.run(
          db
            .updateTable("webhook_outbox")
            .set({
              attempts: sql`json_insert(attempts, '$[#]', json(${JSON.stringify(attempt)}))`,
              ...("final" in next ? { status: next.final } : { next_attempt_at: next.retryAt })
            })
            .where("delivery_id", "=", claim.deliveryId)
            .where("status", "=", sql.lit("pending"))
            .where("next_attempt_at", "=", claim.nextAttemptAt)
        )
        return changed > 0
      })
    ),
    forExecution: Effect.fn("SqliteWebhookOutbox.forExecution")((executionId) =>
      client
        .execute("webhooks of execution", (c) =>
          c.all(
            db
              .selectFrom("webhook_outbox")
              .selectAll()
              .where("execution_id", "=", executionId)
              .orderBy("created_at")
              .orderBy("seq")
          ))
        .pipe(Effect.flatMap((rows) => Effect.forEach(rows, fromRow)))
    )
  }
  return service
})

/** Layer of the outbox; needs the connection (see `SqliteStorage`). */
export const layer = Layer.effect(WebhookOutbox.WebhookOutbox, make)
