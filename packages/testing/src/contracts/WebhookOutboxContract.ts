/**
 * Contract of `WebhookOutbox`: due entries are taken oldest first and hidden for the lease,
 * attempts append, a final status ends delivery.
 */
import { describe, expect } from "@effect/vitest"
import { WebhookOutbox } from "@appexec/core"
import { Effect, TestClock } from "effect"
import { completeWithWebhook, type MakeStorage, queued, seedOwner, storageTest } from "../internal/StorageFixtures.js"

const LEASE = 10_000

/** Runs the webhook-outbox contract against fresh storage from `makeStorage` for every test. */
export const suite = (name: string, makeStorage: MakeStorage) =>
  describe(`WebhookOutbox contract: ${name}`, () => {
    const test = storageTest(makeStorage)

    test(
      "takes due entries oldest first, up to the limit, and hides them for the lease",
      Effect.gen(function* () {
        const owner = yield* seedOwner()
        const outbox = yield* WebhookOutbox.WebhookOutbox
        const first = yield* completeWithWebhook(queued(owner, 1), 1, 0)
        yield* TestClock.adjust(5)
        const second = yield* completeWithWebhook(queued(owner, 2), 2, 5)
        const third = yield* completeWithWebhook(queued(owner, 3), 3, 100)
        expect(yield* outbox.claimDue(10, LEASE)).toEqual([first, second])
        expect(yield* outbox.claimDue(10, LEASE)).toEqual([])
        yield* TestClock.adjust(95)
        expect(yield* outbox.claimDue(10, LEASE)).toEqual([third])
        yield* TestClock.adjust(LEASE)
        const again = yield* outbox.claimDue(1, LEASE)
        expect(again.map((e) => e.deliveryId)).toEqual([first.deliveryId])
        expect(again[0]!.nextAttemptAt).toBe(5 + LEASE)
      })
    )

    test(
      "records attempts, retries at the given time, and stops at a final status",
      Effect.gen(function* () {
        const owner = yield* seedOwner()
        const outbox = yield* WebhookOutbox.WebhookOutbox
        const entry = yield* completeWithWebhook(queued(owner, 1), 1, 0)
        expect((yield* outbox.claimDue(10, LEASE)).length).toBe(1)
        const failedAttempt = { at: 0, statusCode: 500, error: "HTTP 500" }
        yield* outbox.recordAttempt(entry.deliveryId, failedAttempt, { retryAt: 5_000 })
        expect(yield* outbox.forExecution(entry.executionId)).toEqual([
          { ...entry, attempts: [failedAttempt], nextAttemptAt: 5_000 }
        ])
        yield* TestClock.adjust(4_999)
        expect(yield* outbox.claimDue(10, LEASE)).toEqual([])
        yield* TestClock.adjust(1)
        expect((yield* outbox.claimDue(10, LEASE)).length).toBe(1)
        const okAttempt = { at: 5_000, statusCode: 204, error: null }
        yield* outbox.recordAttempt(entry.deliveryId, okAttempt, { final: "delivered" })
        const [delivered] = yield* outbox.forExecution(entry.executionId)
        expect(delivered).toMatchObject({ status: "delivered", attempts: [failedAttempt, okAttempt] })
        yield* TestClock.adjust(10 * LEASE)
        expect(yield* outbox.claimDue(10, LEASE)).toEqual([])
      })
    )

    test(
      "a failed delivery is final too; other executions' deliveries are not listed",
      Effect.gen(function* () {
        const owner = yield* seedOwner()
        const outbox = yield* WebhookOutbox.WebhookOutbox
        const one = yield* completeWithWebhook(queued(owner, 1), 1, 0)
        const two = yield* completeWithWebhook(queued(owner, 2), 2, 0)
        yield* outbox.recordAttempt(one.deliveryId, { at: 0, statusCode: null, error: "timeout" }, { final: "failed" })
        expect((yield* outbox.forExecution(one.executionId)).map((e) => e.status)).toEqual(["failed"])
        expect(yield* outbox.forExecution(two.executionId)).toEqual([two])
        expect((yield* outbox.claimDue(10, LEASE)).map((e) => e.deliveryId)).toEqual([two.deliveryId])
      })
    )
  })
