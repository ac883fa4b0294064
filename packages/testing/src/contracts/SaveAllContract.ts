/**
 * Contract of `ExecutionStore.saveAll`, for the stores that have one (SQLite, PostgreSQL, memory): each save
 * as `save` does it, fenced by its own lease, with its own webhook delivery, one answer per save
 * in order; and it stands for the store's own `save` only (`saveAllOf`).
 */
import { ExecutionStore } from "@appexec/core"
import { expect } from "@effect/vitest"
import { Effect, Either, Option, TestClock } from "effect"
import {
  attempted,
  claimSome,
  completed,
  contract,
  delivery,
  LEASE,
  queued,
  seeded,
  started
} from "../internal/StorageFixtures.js"

/** Runs the `saveAll` contract against fresh storage from `makeStorage` for every test. */
export const suite = contract("ExecutionStore.saveAll contract", (test) => {
  test(
    "saves each as save does: under its own lease, a superseded one LeaseLost and unwritten, terminal ones with their delivery",
    Effect.gen(function*() {
      const { outbox, owner, store } = yield* seeded
      const saveAll = ExecutionStore.saveAllOf(store)
      expect(saveAll).toBeDefined()
      // b is claimed first, its lease runs out and it is claimed again: its first lease is stale.
      yield* store.insert(queued(owner, 2))
      const staleB = yield* claimSome("w", LEASE)
      yield* TestClock.adjust(LEASE)
      const b = yield* claimSome("w", LEASE)
      yield* store.insert(queued(owner, 1))
      yield* store.insert(queued(owner, 3))
      const a = yield* claimSome("w", LEASE)
      const c = yield* claimSome("w", LEASE)
      const doneA = completed(started(a.execution, LEASE + 1), LEASE + 2)
      const entryA = delivery(doneA, 1, LEASE + 2)
      const doneB = completed(staleB.execution, LEASE + 2)
      const runningC = started(c.execution, LEASE + 1)
      const results = yield* saveAll!([
        { record: doneA, lease: a.lease, outbox: entryA },
        { record: doneB, lease: staleB.lease, outbox: delivery(doneB, 2, LEASE + 2) },
        // A delivery with a save that is not terminal is not recorded, as with `save`.
        { record: runningC, lease: c.lease, outbox: delivery(runningC, 3, LEASE + 1) }
      ])
      expect(results.map(Either.isRight)).toEqual([true, false, true])
      expect(Either.isLeft(results[1]!) && results[1].left).toMatchObject({
        _tag: "LeaseLost",
        executionId: doneB.executionId
      })
      expect(yield* store.get(doneA.executionId)).toEqual(Option.some({ ...doneA, attempt: 1 }))
      expect(yield* outbox.forExecution(doneA.executionId)).toEqual([entryA])
      expect(yield* store.get(doneB.executionId)).toEqual(Option.some(attempted(queued(owner, 2), 2)))
      expect(b.lease.attempt).toBe(2)
      expect(yield* outbox.forExecution(doneB.executionId)).toEqual([])
      expect(yield* store.get(runningC.executionId)).toEqual(Option.some({ ...runningC, attempt: 1 }))
      expect(yield* outbox.forExecution(runningC.executionId)).toEqual([])
      // The terminal save ended a's lease; c's goes on.
      const again = yield* saveAll!([
        { record: doneA, lease: a.lease },
        { record: completed(runningC, LEASE + 3), lease: c.lease }
      ])
      expect(again.map((r) => Either.isLeft(r) && r.left._tag)).toEqual(["LeaseLost", false])
    })
  )

  test(
    "a hundred saves at once are each answered in order, those under a wrong lease LeaseLost",
    Effect.gen(function*() {
      const { owner, store } = yield* seeded
      const saveAll = ExecutionStore.saveAllOf(store)!
      for (let n = 1; n <= 100; n++) yield* store.insert(queued(owner, n))
      const claims = yield* Effect.forEach(Array.from({ length: 100 }), () => claimSome("w", LEASE))
      const results = yield* saveAll(claims.map((claim, i) => ({
        record: completed(claim.execution, 5),
        // Every seventh under a token the store never gave.
        lease: i % 7 === 3 ? { ...claim.lease, token: claim.lease.token + 1_000 } : claim.lease
      })))
      expect(results.map(Either.isLeft)).toEqual(claims.map((_, i) => i % 7 === 3))
      const stored = yield* Effect.forEach(claims, (claim) => store.get(claim.execution.executionId))
      expect(stored.map((r) => Option.getOrThrow(r).status)).toEqual(
        claims.map((_, i) => i % 7 === 3 ? "queued" : "completed")
      )
    })
  )

  test(
    "stands for the store's own save only: a store whose save is replaced has none",
    Effect.gen(function*() {
      const store = yield* ExecutionStore.ExecutionStore
      expect(ExecutionStore.saveAllOf(store)).toBe(store.saveAll)
      const wrapped: ExecutionStore.ExecutionStore["Type"] = { ...store, save: (r, l, o) => store.save(r, l, o) }
      expect(ExecutionStore.saveAllOf(wrapped)).toBeUndefined()
    })
  )
})
