/**
 * Contract of `WebhookOutbox`: due entries are taken oldest first and hidden for the lease,
 * attempts append under a current claim only, a final status ends delivery, and a delivery that
 * is over can be armed again for one attempt, once at a time. Entries of events added as an
 * execution runs keep their event and body, and are delivered like any other; the completion
 * entry of an execution that asked for events keeps its event, and the execution its events.
 */
import { WebhookOutbox } from "@appexec/core"
import { expect } from "@effect/vitest"
import { Effect, Option, TestClock } from "effect"
import {
  claimSome,
  completed,
  completeWithWebhook,
  contract,
  delivery,
  queued,
  seeded,
  uuid
} from "../internal/StorageFixtures.js"

const LEASE = 10_000

/** Runs the webhook-outbox contract against fresh storage from `makeStorage` for every test. */
export const suite = contract("WebhookOutbox contract", (test) => {
  test(
    "takes due entries oldest first, up to the limit, and hides them for the lease",
    Effect.gen(function*() {
      const { outbox, owner } = yield* seeded
      const first = yield* completeWithWebhook(queued(owner, 1), 1, 0)
      yield* TestClock.adjust(5)
      const second = yield* completeWithWebhook(queued(owner, 2), 2, 5)
      const third = yield* completeWithWebhook(queued(owner, 3), 3, 100)
      const leased = { nextAttemptAt: 5 + LEASE }
      expect(yield* outbox.claimDue(10, LEASE)).toEqual([{ ...first, ...leased }, { ...second, ...leased }])
      expect(yield* outbox.claimDue(10, LEASE)).toEqual([])
      yield* TestClock.adjust(95)
      expect(yield* outbox.claimDue(10, LEASE)).toEqual([{ ...third, nextAttemptAt: 100 + LEASE }])
      yield* TestClock.adjust(LEASE)
      const again = yield* outbox.claimDue(1, LEASE)
      expect(again.map((e) => e.deliveryId)).toEqual([first.deliveryId])
      expect(again[0]!.nextAttemptAt).toBe(100 + 2 * LEASE)
    })
  )

  test(
    "records attempts, retries at the given time, and stops at a final status",
    Effect.gen(function*() {
      const { outbox, owner } = yield* seeded
      const entry = yield* completeWithWebhook(queued(owner, 1), 1, 0)
      const [claimed] = yield* outbox.claimDue(10, LEASE)
      const failedAttempt = { at: 0, statusCode: 500, error: "HTTP 500" }
      expect(yield* outbox.recordAttempt(claimed!, failedAttempt, { retryAt: 5_000 })).toBe(true)
      expect(yield* outbox.forExecution(entry.executionId)).toEqual([
        { ...entry, attempts: [failedAttempt], nextAttemptAt: 5_000 }
      ])
      yield* TestClock.adjust(4_999)
      expect(yield* outbox.claimDue(10, LEASE)).toEqual([])
      yield* TestClock.adjust(1)
      const [retried] = yield* outbox.claimDue(10, LEASE)
      const okAttempt = { at: 5_000, statusCode: 204, error: null }
      expect(yield* outbox.recordAttempt(retried!, okAttempt, { final: "delivered" })).toBe(true)
      const [delivered] = yield* outbox.forExecution(entry.executionId)
      expect(delivered).toMatchObject({ status: "delivered", attempts: [failedAttempt, okAttempt] })
      yield* TestClock.adjust(10 * LEASE)
      expect(yield* outbox.claimDue(10, LEASE)).toEqual([])
    })
  )

  test(
    "a failed delivery is final too; other executions' deliveries are not listed",
    Effect.gen(function*() {
      const { outbox, owner } = yield* seeded
      const one = yield* completeWithWebhook(queued(owner, 1), 1, 0)
      const two = yield* completeWithWebhook(queued(owner, 2), 2, 0)
      const [claimed] = yield* outbox.claimDue(1, LEASE)
      expect(claimed!.deliveryId).toBe(one.deliveryId)
      yield* outbox.recordAttempt(claimed!, { at: 0, statusCode: null, error: "timeout" }, { final: "failed" })
      expect((yield* outbox.forExecution(one.executionId)).map((e) => e.status)).toEqual(["failed"])
      expect(yield* outbox.forExecution(two.executionId)).toEqual([two])
      expect((yield* outbox.claimDue(10, LEASE)).map((e) => e.deliveryId)).toEqual([two.deliveryId])
    })
  )

  test(
    "a lapsed claim records nothing once another claim took the entry over, before or after its record",
    Effect.gen(function*() {
      const { outbox, owner } = yield* seeded
      const entry = yield* completeWithWebhook(queued(owner, 1), 1, 0)
      const [slow] = yield* outbox.claimDue(10, LEASE)
      yield* TestClock.adjust(LEASE)
      const [fast] = yield* outbox.claimDue(10, LEASE)
      expect(fast!.deliveryId).toBe(entry.deliveryId)
      // The slow dispatcher's late answer, before and after the new owner records its own.
      const late = { at: 0, statusCode: null, error: "timeout" }
      expect(yield* outbox.recordAttempt(slow!, late, { retryAt: 20 * LEASE })).toBe(false)
      const ok = { at: LEASE, statusCode: 204, error: null }
      expect(yield* outbox.recordAttempt(fast!, ok, { final: "delivered" })).toBe(true)
      expect(yield* outbox.recordAttempt(slow!, late, { final: "failed" })).toBe(false)
      const [after] = yield* outbox.forExecution(entry.executionId)
      expect(after).toMatchObject({ status: "delivered", attempts: [ok] })
    })
  )

  test(
    "a claim records one attempt: a second record under it, or one after the retry was claimed again, is refused",
    Effect.gen(function*() {
      const { outbox, owner } = yield* seeded
      const entry = yield* completeWithWebhook(queued(owner, 1), 1, 0)
      const [first] = yield* outbox.claimDue(10, LEASE)
      const failed = { at: 0, statusCode: 500, error: "HTTP 500" }
      expect(yield* outbox.recordAttempt(first!, failed, { retryAt: 5_000 })).toBe(true)
      expect(yield* outbox.recordAttempt(first!, failed, { retryAt: 5_000 })).toBe(false)
      yield* TestClock.adjust(5_000)
      const [second] = yield* outbox.claimDue(10, LEASE)
      expect(second!.attempts).toEqual([failed])
      expect(yield* outbox.recordAttempt(first!, failed, { final: "failed" })).toBe(false)
      const [after] = yield* outbox.forExecution(entry.executionId)
      expect(after).toMatchObject({ status: "pending", nextAttemptAt: 5_000 + LEASE, attempts: [failed] })
    })
  )

  test(
    "a delivery that is over is armed again for one attempt, keeping its attempts; a pending one is not",
    Effect.gen(function*() {
      const { outbox, owner } = yield* seeded
      const entry = yield* completeWithWebhook(queued(owner, 1), 1, 0)
      // Pending: under way (its first attempt is due), so not armed again.
      expect(yield* outbox.redeliver(entry.deliveryId, 0)).toEqual(Option.none())
      const [claimed] = yield* outbox.claimDue(10, LEASE)
      expect(yield* outbox.redeliver(entry.deliveryId, 0)).toEqual(Option.none())
      const ok = { at: 0, statusCode: 204, error: null }
      yield* outbox.recordAttempt(claimed!, ok, { final: "delivered" })

      yield* TestClock.adjust(1_000)
      const armed = { ...entry, status: "pending", nextAttemptAt: 1_000, attempts: [ok], redelivery: true }
      expect(yield* outbox.redeliver(entry.deliveryId, 1_000)).toEqual(Option.some(armed))
      expect(yield* outbox.forExecution(entry.executionId)).toEqual([armed])
      // Once at a time: the second of two redeliveries finds it pending.
      expect(yield* outbox.redeliver(entry.deliveryId, 1_000)).toEqual(Option.none())
      const [again] = yield* outbox.claimDue(10, LEASE)
      expect(again).toEqual({ ...armed, nextAttemptAt: 1_000 + LEASE })
      const refused = { at: 1_000, statusCode: 500, error: "HTTP 500" }
      expect(yield* outbox.recordAttempt(again!, refused, { final: "failed" })).toBe(true)
      const [failed] = yield* outbox.forExecution(entry.executionId)
      expect(failed).toMatchObject({ status: "failed", attempts: [ok, refused], redelivery: true })

      // A failed delivery is over too.
      yield* TestClock.adjust(1_000)
      expect(Option.map(yield* outbox.redeliver(entry.deliveryId, 2_000), (e) => e.attempts)).toEqual(
        Option.some([ok, refused])
      )
      expect(yield* outbox.redeliver(WebhookOutbox.DeliveryId.make(uuid(6, 99)), 2_000)).toEqual(Option.none())
    })
  )

  test(
    "entries of events keep their event and body, listed with the completion in order, and are claimed like it",
    Effect.gen(function*() {
      const { outbox, owner, store } = yield* seeded
      const record = { ...queued(owner, 1), webhookEvents: ["start", "logs", "completed"] as const }
      yield* store.insert(record)
      const claim = yield* claimSome("worker-events", LEASE)
      expect(claim.execution.webhookEvents).toEqual(["start", "logs", "completed"])
      expect(Option.map(yield* store.get(record.executionId), (r) => r.webhookEvents)).toEqual(
        Option.some(["start", "logs", "completed"])
      )
      const start = { ...delivery(record, 1, 0), event: "start" as const, body: `{"type":"start","ünï":"✓"}` }
      const logs = { ...delivery(record, 2, 0), event: "logs" as const, body: `{"type":"logs"}` }
      yield* outbox.add([start, logs])
      yield* outbox.add([])
      yield* TestClock.adjust(5)
      const completion = { ...delivery(record, 3, 5), event: "completed" as const }
      yield* store.save(completed(claim.execution, 5), claim.lease, completion)
      expect(yield* outbox.forExecution(record.executionId)).toEqual([start, logs, completion])
      const claimed = yield* outbox.claimDue(10, LEASE)
      expect(claimed.map((e) => [e.event, e.body])).toEqual([
        ["start", start.body],
        ["logs", logs.body],
        ["completed", undefined]
      ])
      const ok = { at: 5, statusCode: 204, error: null }
      expect(yield* outbox.recordAttempt(claimed[0]!, ok, { final: "delivered" })).toBe(true)
      expect((yield* outbox.forExecution(record.executionId))[0]).toMatchObject({
        event: "start",
        body: start.body,
        status: "delivered",
        attempts: [ok]
      })
      // An execution that gave no events has none stored, and its completion entry no event.
      const plain = yield* completeWithWebhook(queued(owner, 2), 4, 5)
      expect((yield* outbox.forExecution(plain.executionId))[0]).not.toHaveProperty("event")
      expect(Option.map(yield* store.get(plain.executionId), (r) => "webhookEvents" in r)).toEqual(Option.some(false))
    })
  )
})
