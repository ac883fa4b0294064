/**
 * `WebhookOutbox` on SQLite. Entries are inserted by `SqliteExecutionStore.save` with the
 * terminal transition; here they are claimed for delivery and their attempts recorded.
 */
import { Errors, WebhookOutbox } from "@appexec/core"
import { Clock, Effect, Either, Layer, Schema } from "effect"
import { type Selectable, sql } from "kysely"
import * as PreparedQuery from "./internal/PreparedQuery.js"
import { parseJson } from "./internal/RowDecoding.js"
import type { WebhookOutboxTable } from "./internal/Tables.js"
import { SqliteClient } from "./SqliteClient.js"

type OutboxRow = Selectable<WebhookOutboxTable>

const fields = WebhookOutbox.OutboxEntry.fields
const isStatus = Schema.is(fields.status)
const trusted = { disableValidation: true } as const

/**
 * The entry a row holds. Rows are written by `SqliteExecutionStore.save` and `recordAttempt` from
 * entries the domain schema typed, so they are read back without decoding them again; only the
 * status text, which SQLite cannot keep apart, is checked.
 */
const fromRow = (row: OutboxRow): Either.Either<WebhookOutbox.OutboxEntry, Errors.StorageError> => {
  const status = row.status
  if (!isStatus(status)) {
    return Either.left(
      new Errors.StorageError({ operation: "read webhook outbox: decode row", cause: `unknown status '${status}'` })
    )
  }
  return Either.map(parseJson(row.attempts, "read webhook outbox"), (attempts) => ({
    deliveryId: fields.deliveryId.make(row.delivery_id, trusted),
    executionId: fields.executionId.make(row.execution_id, trusted),
    userId: fields.userId.make(row.user_id, trusted),
    url: row.url,
    status,
    nextAttemptAt: row.next_attempt_at,
    // Written by this adapter as JSON of `DeliveryAttempt`s (see above).
    attempts: attempts as WebhookOutbox.OutboxEntry["attempts"],
    createdAt: row.created_at,
    ...(row.trace_parent === null ? {} : { traceParent: row.trace_parent })
  }))
}

/** The outbox over the instance's connection. */
export const make = Effect.gen(function*() {
  const client = yield* SqliteClient
  const db = client.builder

  const dueQuery = PreparedQuery.make((p: PreparedQuery.Param<{ now: number; limit: number }>) =>
    db
      .selectFrom("webhook_outbox")
      .selectAll()
      // A literal, not a parameter: only then can SQLite use the partial index `webhook_outbox_due`.
      .where("status", "=", sql.lit("pending"))
      .where("next_attempt_at", "<=", p("now"))
      .orderBy("next_attempt_at")
      .orderBy("created_at")
      .orderBy("seq")
      .limit(p("limit"))
  )
  // The claimed rows travel as one JSON array, so one prepared statement serves any number.
  const claimQuery = PreparedQuery.make((p: PreparedQuery.Param<{ expiresAt: number; seqs: string }>) =>
    db
      .updateTable("webhook_outbox")
      .set({ next_attempt_at: p("expiresAt") })
      .where("seq", "in", sql<number>`(select value from json_each(${p("seqs")}))`)
  )
  type Fence = { deliveryId: string; claimedUntil: number; attempt: string }
  const record = <P extends Fence>(
    set: (p: PreparedQuery.Param<P>) => { status: string } | { next_attempt_at: number }
  ) =>
    PreparedQuery.make((p: PreparedQuery.Param<P>) =>
      db
        .updateTable("webhook_outbox")
        .set({ attempts: sql`json_insert(attempts, '$[#]', json(${p("attempt")}))`, ...set(p) })
        .where("delivery_id", "=", p("deliveryId"))
        .where("status", "=", sql.lit("pending"))
        .where("next_attempt_at", "=", p("claimedUntil"))
    )
  const recordFinal = record((p: PreparedQuery.Param<Fence & { status: string }>) => ({ status: p("status") }))
  const recordRetry = record((p: PreparedQuery.Param<Fence & { retryAt: number }>) => ({
    next_attempt_at: p("retryAt")
  }))

  const service: WebhookOutbox.WebhookOutbox["Type"] = {
    // Every delivery claims and records: untraced, compiled once, and group-committed.
    claimDue: (limit, leaseMs) =>
      Effect.gen(function*() {
        const now = yield* Clock.currentTimeMillis
        const expiresAt = now + leaseMs
        const rows = yield* client.batched("claim due webhooks", (c) => {
          const due = c.all(dueQuery.bind({ now, limit }))
          if (due.length > 0) c.run(claimQuery.bind({ expiresAt, seqs: JSON.stringify(due.map((row) => row.seq)) }))
          return due
        })
        // Handed out with the lease end they now carry: it is the claim that fences `recordAttempt`.
        return yield* Effect.forEach(rows, (row) => fromRow({ ...row, next_attempt_at: expiresAt }))
      }),
    recordAttempt: (claim, attempt, next) =>
      client.batched("record webhook attempt", (c) => {
        // Appended inside SQLite, and only while the claim is current: a later claim moved
        // `next_attempt_at` past this lease end, and a recorded attempt moved it or ended delivery.
        const fence = {
          deliveryId: claim.deliveryId,
          claimedUntil: claim.nextAttemptAt,
          attempt: JSON.stringify(attempt)
        }
        const changed = "final" in next
          ? c.run(recordFinal.bind({ ...fence, status: next.final }))
          : c.run(recordRetry.bind({ ...fence, retryAt: next.retryAt }))
        return changed > 0
      }),
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
