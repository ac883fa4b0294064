/**
 * In-memory `WebhookOutbox` over the outbox entries `MemoryExecutions` shares with its store, so a
 * terminal save and its entry are one atomic step.
 */
import { type WebhookOutbox } from "@appexec/core"
import { Effect, Option, Queue } from "effect"
import { currentTime } from "./ExecutionRows.js"

/** The outbox over `outbox` (entries by delivery id); `armed` is offered whenever an entry becomes due. */
export const make = (
  outbox: Map<string, WebhookOutbox.OutboxEntry>,
  armed: Queue.Queue<void>
): WebhookOutbox.WebhookOutbox["Type"] => {
  return {
    claimDue: (limit, leaseMs) =>
      Effect.map(currentTime, (now) => {
        const due = [...outbox.values()]
          .filter((e) => e.status === "pending" && e.nextAttemptAt <= now)
          .sort((a, b) => a.nextAttemptAt - b.nextAttemptAt || a.createdAt - b.createdAt)
          .slice(0, limit)
        const claimed = due.map((entry) => ({ ...entry, nextAttemptAt: now + leaseMs }))
        for (const entry of claimed) outbox.set(entry.deliveryId, entry)
        return claimed
      }),
    recordAttempt: (claim, attempt, next) =>
      Effect.sync(() => {
        const entry = outbox.get(claim.deliveryId)
        // Only while the claim is current, as in the SQL adapters.
        if (entry === undefined || entry.status !== "pending" || entry.nextAttemptAt !== claim.nextAttemptAt) {
          return false
        }
        outbox.set(claim.deliveryId, {
          ...entry,
          attempts: [...entry.attempts, attempt],
          ...("final" in next ? { status: next.final } : { nextAttemptAt: next.retryAt })
        })
        return true
      }),
    redeliver: (deliveryId, at) =>
      Effect.suspend(() => {
        const entry = outbox.get(deliveryId)
        if (entry === undefined || entry.status === "pending") return Effect.succeedNone
        const rearmed: WebhookOutbox.OutboxEntry = { ...entry, status: "pending", nextAttemptAt: at, redelivery: true }
        outbox.set(deliveryId, rearmed)
        return Effect.as(Queue.offer(armed, undefined), Option.some(rearmed))
      }),
    add: (entries) =>
      Effect.suspend(() => {
        for (const entry of entries) outbox.set(entry.deliveryId, entry)
        return Queue.offer(armed, undefined)
      }),
    forExecution: (executionId) =>
      Effect.sync(() =>
        [...outbox.values()].filter((e) => e.executionId === executionId).sort((a, b) => a.createdAt - b.createdAt)
      ),
    awaitDue: Queue.take(armed)
  }
}
