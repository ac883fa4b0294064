/**
 * Contract of cancellation and idempotent starts in the execution storage: an idempotency key
 * records one execution per workspace until it expires, whatever the concurrency; a cancel of an
 * execution no worker holds fails it with its webhook in one write; a cancel request reaches the
 * worker that holds the execution, and only that worker.
 */
import { ExecutionQueue, type ExecutionRecord, ExecutionStore } from "@appexec/core"
import { expect } from "@effect/vitest"
import { Effect, Option, TestClock } from "effect"
import {
  attempted,
  claimSome,
  contract,
  delivery,
  LEASE,
  queued,
  seeded,
  seedOwner,
  started
} from "../internal/StorageFixtures.js"

/** The failed form of `record` as a cancel writes it. */
const canceled = (record: ExecutionRecord.ExecutionRecord, at: number): ExecutionRecord.ExecutionRecord => ({
  ...started(record, at),
  status: "failed",
  errorMessage: "The execution was canceled.",
  completedAt: at
})

/** Runs the contract against fresh storage from `makeStorage` for every test. */
export const suite = contract("cancel and idempotency contract", (test) => {
  test(
    "an idempotency key records one execution per workspace; a repeat finds the first; an expired key is replaced",
    Effect.gen(function*() {
      const alice = yield* seedOwner(1)
      const bob = yield* seedOwner(2)
      const store = yield* ExecutionStore.ExecutionStore
      const first = queued(alice, 1)
      const key = { workspaceId: alice.workspaceId, key: "order-42", fingerprint: "f1", expiresAt: 1_000 }
      expect(yield* store.insertIdempotent(first, key, 0)).toEqual({ _tag: "Inserted" })
      const repeat = queued(alice, 2)
      expect(yield* store.insertIdempotent(repeat, { ...key, fingerprint: "f2" }, 10)).toEqual({
        _tag: "Existing",
        executionId: first.executionId,
        fingerprint: "f1"
      })
      expect(yield* store.get(repeat.executionId)).toEqual(Option.none())
      // Another workspace's key of the same name is its own.
      const other = queued(bob, 3)
      expect(
        yield* store.insertIdempotent(other, { ...key, workspaceId: bob.workspaceId }, 10)
      ).toEqual({ _tag: "Inserted" })
      // Once expired, the key records a new execution.
      const later = queued(alice, 4)
      expect(yield* store.insertIdempotent(later, { ...key, expiresAt: 5_000 }, 1_000)).toEqual({
        _tag: "Inserted"
      })
      expect(Option.isSome(yield* store.get(later.executionId))).toBe(true)
      expect(yield* store.insertIdempotent(queued(alice, 5), key, 2_000)).toMatchObject({
        _tag: "Existing",
        executionId: later.executionId
      })
    })
  )

  test(
    "concurrent inserts with one key record exactly one execution",
    Effect.gen(function*() {
      const owner = yield* seedOwner(1)
      const store = yield* ExecutionStore.ExecutionStore
      const key = { workspaceId: owner.workspaceId, key: "same", fingerprint: "f", expiresAt: 1_000 }
      const results = yield* Effect.all(
        Array.from({ length: 8 }, (_, i) => store.insertIdempotent(queued(owner, 10 + i), key, 0)),
        { concurrency: "unbounded" }
      )
      expect(results.filter((r) => r._tag === "Inserted")).toHaveLength(1)
      const ids = new Set(results.flatMap((r) => (r._tag === "Existing" ? [r.executionId] : [])))
      expect(ids.size).toBe(1)
      const [winner] = [...ids]
      expect(Option.isSome(yield* store.get(winner!))).toBe(true)
    })
  )

  test(
    "a cancel of an unclaimed queued execution fails it with its webhook; it is no longer claimable",
    Effect.gen(function*() {
      const { outbox, owner, queue, store } = yield* seeded
      const record = queued(owner, 1)
      yield* store.insert(record)
      const failed = canceled(record, 5)
      const entry = delivery(failed, 1, 5)
      expect(yield* store.cancelQueued(failed, 5, entry)).toBe(true)
      expect(yield* store.get(record.executionId)).toEqual(Option.some(failed))
      expect((yield* outbox.forExecution(record.executionId)).map((e) => e.deliveryId)).toEqual([entry.deliveryId])
      expect(yield* ExecutionQueue.claimOne(queue, "w", LEASE)).toEqual(Option.none())
      // A second cancel finds it no longer queued.
      expect(yield* store.cancelQueued(failed, 6, delivery(failed, 2, 6))).toBe(false)
      expect(yield* outbox.forExecution(record.executionId)).toHaveLength(1)
    })
  )

  test(
    "a cancel of a claimed execution writes nothing until its lease has expired",
    Effect.gen(function*() {
      const { outbox, owner, store } = yield* seeded
      const record = queued(owner, 1)
      yield* store.insert(record)
      yield* claimSome("w", LEASE)
      const failed = canceled(record, 5)
      expect(yield* store.cancelQueued(failed, 5, delivery(failed, 1, 5))).toBe(false)
      expect(yield* store.get(record.executionId)).toEqual(Option.some(attempted(record, 1)))
      expect(yield* outbox.forExecution(record.executionId)).toEqual([])
      yield* TestClock.adjust(LEASE)
      expect(yield* store.cancelQueued(failed, LEASE, undefined)).toBe(true)
      expect(yield* outbox.forExecution(record.executionId)).toEqual([])
    })
  )

  test(
    "a cancel request reaches the worker that holds the execution, only while it runs",
    Effect.gen(function*() {
      const { owner, queue, store } = yield* seeded
      yield* store.insert(queued(owner, 1))
      yield* store.insert(queued(owner, 2))
      const a = yield* claimSome("a", LEASE)
      const b = yield* claimSome("b", LEASE)
      yield* store.save(started(a.execution, 1), a.lease)
      expect(yield* queue.cancelRequested("a")).toEqual([])
      expect(yield* store.requestCancel(a.execution.executionId, 2)).toBe(true)
      expect(yield* queue.cancelRequested("a")).toEqual([a.execution.executionId])
      expect(yield* queue.cancelRequested("b")).toEqual([])
      // A queued execution claimed but not started yet is reached too.
      expect(yield* store.requestCancel(b.execution.executionId, 3)).toBe(true)
      expect(yield* queue.cancelRequested("b")).toEqual([b.execution.executionId])
      // Finished: nothing to request, nothing to report.
      yield* store.save(canceled(a.execution, 4), a.lease)
      expect(yield* queue.cancelRequested("a")).toEqual([])
      expect(yield* store.requestCancel(a.execution.executionId, 5)).toBe(false)
    })
  )
})
