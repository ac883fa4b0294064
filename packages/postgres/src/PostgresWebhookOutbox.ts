/**
 * `WebhookOutbox` on PostgreSQL: the dialect-neutral outbox of `@appexec/sql` (`SqlWebhookOutbox`:
 * recording attempts, redeliveries, an execution's entries) and PostgreSQL's claim of due entries.
 * Completion entries are inserted by `PostgresExecutionStore.save` with the terminal transition,
 * those of other events by `add` (which wakes the dispatchers as a redelivery does); here they
 * are claimed for delivery (`FOR UPDATE SKIP LOCKED`, so dispatchers in many processes take
 * different entries). A due entry added by a process that may deliver none (a cancel in an API
 * process, a redelivery) wakes the dispatchers of every process (`awaitDue`, through `LISTEN`),
 * instead of waiting for their poll.
 */
import { WebhookOutbox } from "@appexec/core"
import { RowMapping, SqlWebhookOutbox } from "@appexec/sql"
import { Clock, Effect, Layer, Option } from "effect"
import { sql } from "kysely"
import { WorkNotifier } from "./internal/WorkNotifier.js"
import { WorkSignal } from "./internal/WorkSignal.js"
import { PostgresClient } from "./PostgresClient.js"

/** The outbox over the instance's pool. */
export const make = Effect.gen(function*() {
  const client = yield* PostgresClient
  const signal = yield* WorkSignal
  const notifier = yield* WorkNotifier
  const neutral = yield* SqlWebhookOutbox.make

  const service: WebhookOutbox.WebhookOutbox["Type"] = {
    ...neutral,
    redeliver: (deliveryId, at) =>
      Effect.tap(
        neutral.redeliver(deliveryId, at),
        (entry) => Option.isSome(entry) ? notifier.notifyWebhooks : Effect.void
      ),
    add: (entries) => Effect.zipRight(neutral.add(entries), notifier.notifyWebhooks),
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
        return yield* Effect.forEach(ordered, RowMapping.outboxEntryOfRow)
      })
    ),
    awaitDue: signal.webhooks
  }
  return service
})

/** Layer of the outbox; needs the pool, the runner, the work signal and the notifier (see `PostgresStorage`). */
export const layer = Layer.effect(WebhookOutbox.WebhookOutbox, make)
