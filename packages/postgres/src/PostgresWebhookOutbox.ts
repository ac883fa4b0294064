/**
 * `WebhookOutbox` on PostgreSQL. Entries are inserted by `PostgresExecutionStore.save` with the
 * terminal transition; here they are claimed for delivery (`FOR UPDATE SKIP LOCKED`, so
 * dispatchers in many processes take different entries) and their attempts recorded. A due entry
 * added by a process that may deliver none wakes the dispatchers of every process (`awaitDue`,
 * through `LISTEN`), instead of waiting for their poll.
 */
import { type Errors, WebhookOutbox } from "@appexec/core"
import { Clock, Effect, Layer } from "effect"
import { type Selectable, sql } from "kysely"
import { decode } from "./internal/RowDecoding.js"
import type { WebhookOutboxTable } from "./internal/Tables.js"
import { WorkSignal } from "./internal/WorkSignal.js"
import { PostgresClient } from "./PostgresClient.js"

type OutboxRow = Selectable<WebhookOutboxTable>

const decodeEntry = decode(WebhookOutbox.OutboxEntry, "read webhook outbox")

const fromRow = (row: OutboxRow): Effect.Effect<WebhookOutbox.OutboxEntry, Errors.StorageError> =>
  decodeEntry({
    deliveryId: row.delivery_id,
    executionId: row.execution_id,
    userId: row.user_id,
    url: row.url,
    status: row.status,
    nextAttemptAt: row.next_attempt_at,
    attempts: row.attempts,
    createdAt: row.created_at,
    ...(row.trace_parent === null ? {} : { traceParent: row.trace_parent })
  })

/** The outbox over the instance's pool. */
export const make = Effect.gen(function*() {
  const client = yield* PostgresClient
  const signal = yield* WorkSignal

  const service: WebhookOutbox.WebhookOutbox["Type"] = {
    claimDue: Effect.fn("PostgresWebhookOutbox.claimDue")((limit, leaseMs) =>
      Effect.gen(function*() {
        const now = yield* Clock.currentTimeMillis
        const rows = yield* client.execute("claim due webhooks", (db) =>
          db
            .with("due", (qb) =>
              qb
                .selectFrom("webhook_outbox")
                .select(["seq", "next_attempt_at as due_at"])
                .where("status", "=", sql.lit("pending"))
                .where("next_attempt_at", "<=", now)
                .orderBy("next_attempt_at")
                .orderBy("created_at")
                .orderBy("seq")
                .limit(limit)
                .forUpdate()
                .skipLocked())
            .updateTable("webhook_outbox")
            .from("due")
            .set({ next_attempt_at: now + leaseMs })
            .whereRef("webhook_outbox.seq", "=", "due.seq")
            .returningAll("webhook_outbox")
            .returning("due.due_at")
            .execute())
        // RETURNING has no order: put the entries back in the order they came due.
        const ordered = [...rows].sort((a, b) => a.due_at - b.due_at || a.created_at - b.created_at || a.seq - b.seq)
        return yield* Effect.forEach(ordered, fromRow)
      })
    ),
    recordAttempt: Effect.fn("PostgresWebhookOutbox.recordAttempt")((claim, attempt, next) =>
      client.execute("record webhook attempt", async (db) => {
        // Appended in place, and only while the claim is current: a later claim moved
        // `next_attempt_at` past this lease end, and a recorded attempt moved it or ended delivery.
        const result = await db
          .updateTable("webhook_outbox")
          .set({
            attempts: sql`attempts || jsonb_build_array(${JSON.stringify(attempt)}::jsonb)`,
            ...("final" in next ? { status: next.final } : { next_attempt_at: next.retryAt })
          })
          .where("delivery_id", "=", claim.deliveryId)
          .where("status", "=", sql.lit("pending"))
          .where("next_attempt_at", "=", claim.nextAttemptAt)
          .executeTakeFirst()
        return result.numUpdatedRows > 0n
      })
    ),
    forExecution: Effect.fn("PostgresWebhookOutbox.forExecution")((executionId) =>
      client
        .execute("webhooks of execution", (db) =>
          db
            .selectFrom("webhook_outbox")
            .selectAll()
            .where("execution_id", "=", executionId)
            .orderBy("created_at")
            .orderBy("seq")
            .execute())
        .pipe(Effect.flatMap((rows) => Effect.forEach(rows, fromRow)))
    ),
    awaitDue: signal.webhooks
  }
  return service
})

/** Layer of the outbox; needs the pool and the work signal (see `PostgresStorage`). */
export const layer = Layer.effect(WebhookOutbox.WebhookOutbox, make)
