/**
 * `WebhookOutbox` on SQLite: the dialect-neutral outbox of `@appexec/sql` (`SqlWebhookOutbox`:
 * recording attempts, redeliveries, an execution's entries) and SQLite's claim of due entries.
 * Completion entries are inserted by `SqliteExecutionStore.save` with the terminal transition,
 * those of other events by `add`. An addition or a redelivery wakes the dispatcher of this process
 * (`awaitDue`); one in another process finds it at its next poll.
 */
import { WebhookOutbox } from "@appexec/core"
import { PreparedQuery, RowMapping, SqlWebhookOutbox } from "@appexec/sql"
import { Clock, Effect, Layer, Option, Queue } from "effect"
import { sql } from "kysely"
import { SqliteClient } from "./SqliteClient.js"

/** The outbox over the instance's connection. */
export const make = Effect.gen(function*() {
  const client = yield* SqliteClient
  const neutral = yield* SqlWebhookOutbox.make
  const db = client.builder
  const armed = yield* Queue.sliding<void>(1)

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
  const service: WebhookOutbox.WebhookOutbox["Type"] = {
    ...neutral,
    redeliver: (deliveryId, at) =>
      Effect.tap(
        neutral.redeliver(deliveryId, at),
        (entry) => Option.isSome(entry) ? Queue.offer(armed, undefined) : Effect.void
      ),
    add: (entries) => Effect.zipRight(neutral.add(entries), Queue.offer(armed, undefined)),
    awaitDue: Queue.take(armed),
    // Every delivery claims: untraced, compiled once, and group-committed.
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
        return yield* Effect.forEach(rows, (row) => RowMapping.outboxEntryOfRow({ ...row, next_attempt_at: expiresAt }))
      })
  }
  return service
})

/** Layer of the outbox; needs the connection and the runner (see `SqliteStorage`). */
export const layer = Layer.effect(WebhookOutbox.WebhookOutbox, make)
