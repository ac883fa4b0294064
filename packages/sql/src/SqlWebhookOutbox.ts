/**
 * `WebhookOutbox` on SQL, the part every dialect shares: adding the entries of events made as an
 * execution runs, recording an attempt (fenced by the claim it was made under), arming a delivery
 * again, and an execution's entries. Completion entries are inserted by the adapter's terminal
 * save, in the same transaction or statement; claiming due entries, and waking the dispatchers
 * (`awaitDue`, after an addition or a redelivery too), is the adapter's.
 */
import type { WebhookOutbox } from "@appexec/core"
import { Effect, Option } from "effect"
import { sql } from "kysely"
import * as PreparedQuery from "./PreparedQuery.js"
import { outboxEntryOfRow } from "./RowMapping.js"
import { SqlRunner } from "./SqlRunner.js"

/** What an adapter adds: the claim of due entries and its wake-up. */
export type Claims = "claimDue" | "awaitDue"

/** The dialect-neutral part of the outbox. */
export type Neutral = Omit<WebhookOutbox.WebhookOutbox["Type"], Claims>

/** The dialect-neutral part of the outbox, over the runner. */
export const make = Effect.gen(function*() {
  const runner = yield* SqlRunner
  const { builder: db, dialect } = runner
  type Fence = { deliveryId: string; claimedUntil: number; attempt: string }
  const record = <P extends Fence>(
    set: (p: PreparedQuery.Param<P>) => { status: string } | { next_attempt_at: number }
  ) =>
    PreparedQuery.make((p: PreparedQuery.Param<P>) =>
      db
        .updateTable("webhook_outbox")
        .set({ attempts: dialect.appendJson("attempts", p("attempt")), ...set(p) })
        .where("delivery_id", "=", p("deliveryId"))
        .where("status", "=", sql.lit("pending"))
        .where("next_attempt_at", "=", p("claimedUntil"))
    )
  const recordFinal = record((p: PreparedQuery.Param<Fence & { status: string }>) => ({ status: p("status") }))
  const recordRetry = record((p: PreparedQuery.Param<Fence & { retryAt: number }>) => ({
    next_attempt_at: p("retryAt")
  }))

  const service: Neutral = {
    add: (entries) =>
      entries.length === 0 ? Effect.void : Effect.asVoid(runner.write(
        "add webhook events",
        db.insertInto("webhook_outbox").values(entries.map((entry) => ({
          delivery_id: entry.deliveryId,
          execution_id: entry.executionId,
          user_id: entry.userId,
          url: entry.url,
          status: entry.status,
          next_attempt_at: entry.nextAttemptAt,
          attempts: JSON.stringify(entry.attempts),
          created_at: entry.createdAt,
          trace_parent: entry.traceParent ?? null,
          event: entry.event ?? null,
          body: entry.body ?? null
        })))
      )),
    // Every delivery records one: untraced, compiled once, and group-committed where the dialect can.
    recordAttempt: (claim, attempt, next) => {
      // Appended in place, and only while the claim is current: a later claim moved
      // `next_attempt_at` past this lease end, and a recorded attempt moved it or ended delivery.
      const fence = {
        deliveryId: claim.deliveryId,
        claimedUntil: claim.nextAttemptAt,
        attempt: JSON.stringify(attempt)
      }
      return Effect.map(
        runner.write(
          "record webhook attempt",
          "final" in next
            ? recordFinal.bind({ ...fence, status: next.final })
            : recordRetry.bind({ ...fence, retryAt: next.retryAt })
        ),
        (changed) => changed > 0
      )
    },
    redeliver: Effect.fn("SqlWebhookOutbox.redeliver")((deliveryId, at) =>
      Effect.flatMap(
        runner.first(
          "redeliver webhook",
          db
            .updateTable("webhook_outbox")
            .set({ status: "pending", next_attempt_at: at, redelivery: dialect.bool(true) })
            .where("delivery_id", "=", deliveryId)
            // Only a delivery that is over: a pending one may be claimed, and its claim is fenced on `next_attempt_at`.
            .where("status", "!=", sql.lit("pending"))
            .returningAll()
        ),
        (row) => (row === undefined ? Effect.succeedNone : Effect.map(outboxEntryOfRow(row), Option.some))
      )
    ),
    forExecution: Effect.fn("SqlWebhookOutbox.forExecution")((executionId) =>
      Effect.flatMap(
        runner.all(
          "webhooks of execution",
          db
            .selectFrom("webhook_outbox")
            .selectAll()
            .where("execution_id", "=", executionId)
            .orderBy("created_at")
            .orderBy("seq")
        ),
        (rows) => Effect.forEach(rows, outboxEntryOfRow)
      )
    )
  }
  return service
})
