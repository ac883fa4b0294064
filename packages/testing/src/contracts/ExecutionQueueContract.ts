/**
 * Contract of `ExecutionQueue`: FIFO claims, leases that expire with the clock, renewal,
 * release without counting the claim against `maxAttempts`, fencing tokens, one claim per
 * execution, wake-ups.
 */
import { ExecutionLifecycle, ExecutionQueue, ExecutionStore } from "@appexec/core"
import { expect } from "@effect/vitest"
import { Effect, Either, Fiber, Option, TestClock } from "effect"
import {
  attempted,
  claimSome,
  completed,
  contract,
  LEASE,
  ports,
  queued,
  seeded,
  seedOwner,
  started
} from "../internal/StorageFixtures.js"

/** Runs the queue contract against fresh storage from `makeStorage` for every test. */
export const suite = contract("ExecutionQueue contract", (test) => {
  test(
    "claims nothing when nothing is queued",
    Effect.gen(function*() {
      const queue = yield* ExecutionQueue.ExecutionQueue
      expect(Option.isNone(yield* ExecutionQueue.claimOne(queue, "w", LEASE))).toBe(true)
    })
  )

  test(
    "claims the oldest first, each once, with a lease until now + leaseMs",
    Effect.gen(function*() {
      const { owner, queue, store } = yield* seeded
      for (const n of [1, 2, 3]) yield* store.insert(queued(owner, n))
      yield* TestClock.adjust(1_000)
      const claims = [yield* claimSome("a", LEASE), yield* claimSome("b", LEASE), yield* claimSome("a", LEASE)]
      expect(claims.map((c) => c.execution)).toEqual([1, 2, 3].map((n) => attempted(queued(owner, n), 1)))
      expect(claims.map((c) => c.lease.workerId)).toEqual(["a", "b", "a"])
      for (const claim of claims) {
        expect(claim.lease.executionId).toBe(claim.execution.executionId)
        expect(claim.lease.attempt).toBe(1)
        expect(claim.lease.expiresAt).toBe(1_000 + LEASE)
      }
      expect(Option.isNone(yield* ExecutionQueue.claimOne(queue, "c", LEASE))).toBe(true)
    })
  )

  test(
    "an expired lease makes the execution claimable again, with a new token and the next attempt",
    Effect.gen(function*() {
      const { owner, queue, store } = yield* seeded
      yield* store.insert(queued(owner, 1))
      const first = yield* claimSome("a", LEASE)
      yield* store.save(started(first.execution, 0), first.lease)
      yield* TestClock.adjust(LEASE - 1)
      expect(Option.isNone(yield* ExecutionQueue.claimOne(queue, "b", LEASE))).toBe(true)
      yield* TestClock.adjust(1)
      const second = yield* claimSome("b", LEASE)
      expect(second.execution).toEqual(attempted(started(queued(owner, 1), 0), 2))
      expect(second.lease.attempt).toBe(2)
      expect(second.lease.token).not.toBe(first.lease.token)
      expect(second.lease.expiresAt).toBe(2 * LEASE)
      const lost = yield* Effect.flip(queue.renew(first.lease, LEASE))
      expect(lost._tag).toBe("LeaseLost")
    })
  )

  test(
    "renewing keeps the execution from being claimed; a lapsed lease cannot be renewed",
    Effect.gen(function*() {
      const { owner, queue, store } = yield* seeded
      yield* store.insert(queued(owner, 1))
      const claim = yield* claimSome("a", LEASE)
      yield* TestClock.adjust(20_000)
      const renewed = yield* queue.renew(claim.lease, LEASE)
      expect(renewed).toEqual({ ...claim.lease, expiresAt: 20_000 + LEASE })
      yield* TestClock.adjust(20_000)
      expect(Option.isNone(yield* ExecutionQueue.claimOne(queue, "b", LEASE))).toBe(true)
      yield* TestClock.adjust(LEASE)
      const lapsed = yield* Effect.flip(queue.renew(renewed, LEASE))
      expect(lapsed._tag).toBe("LeaseLost")
    })
  )

  test(
    "a claim writes the lease alone: a queued execution is answered and stays as stored; one whose run saved its start is taken over running",
    Effect.gen(function*() {
      const { owner, queue, store } = yield* seeded
      for (const n of [1, 2, 3]) yield* store.insert(queued(owner, n))
      yield* TestClock.adjust(1_000)
      const bulk = yield* queue.claimBatch("a", LEASE, { limit: 2 })
      expect(bulk.map((c) => c.execution)).toEqual([1, 2].map((n) => attempted(queued(owner, n), 1)))
      for (const claim of bulk) {
        expect(Option.getOrThrow(yield* store.get(claim.execution.executionId))).toEqual(claim.execution)
      }
      // The first run saves its start under its lease; its worker is then lost.
      const begun = Either.getOrThrow(ExecutionLifecycle.transition(bulk[0]!.execution, { _tag: "Started", at: 1_000 }))
      yield* store.save(begun, bulk[0]!.lease)
      yield* TestClock.adjust(LEASE)
      const [again] = yield* queue.claimBatch("b", LEASE, { limit: 1, maxRunningPerWorkspace: 3 })
      expect(again!.execution).toEqual(attempted(started(queued(owner, 1), 1_000), 2))
      expect(again!.lease.attempt).toBe(2)
      // The saves of a claim are fenced by its lease as usual.
      yield* store.save(completed(begun, 2_000), again!.lease)
      expect(Option.getOrThrow(yield* store.get(begun.executionId)).status).toBe("completed")
    })
  )

  test(
    "renewAll renews every current lease in one call and leaves out the lost ones",
    Effect.gen(function*() {
      const { owner, queue, store } = yield* seeded
      expect(yield* queue.renewAll([], LEASE)).toEqual([])
      yield* store.insert(queued(owner, 1))
      yield* store.insert(queued(owner, 2))
      yield* store.insert(queued(owner, 3))
      const claims = yield* queue.claimBatch("a", LEASE, { limit: 3 })
      expect(claims).toHaveLength(3)
      const [first, second, third] = claims.map((c) => c.lease) as [
        ExecutionQueue.Lease,
        ExecutionQueue.Lease,
        ExecutionQueue.Lease
      ]
      // The second is given back and claimed again: its old lease is lost.
      yield* queue.release(second)
      const again = yield* claimSome("b", LEASE)
      expect(again.lease.executionId).toBe(second.executionId)
      yield* TestClock.adjust(20_000)
      const renewed = yield* queue.renewAll([first, second, third], LEASE)
      expect(renewed).toEqual([
        { ...first, expiresAt: 20_000 + LEASE },
        { ...third, expiresAt: 20_000 + LEASE }
      ])
      // When the first leases would have run out, only the unrenewed one is claimable.
      yield* TestClock.adjust(LEASE - 10_000)
      const lapsed = yield* claimSome("c", LEASE)
      expect(lapsed.lease.executionId).toBe(second.executionId)
      expect(Option.isNone(yield* ExecutionQueue.claimOne(queue, "c", LEASE))).toBe(true)
      // A lapsed lease is not renewed.
      yield* TestClock.adjust(LEASE)
      expect(yield* queue.renewAll(renewed, LEASE)).toEqual([])
    })
  )

  test(
    "a release makes the execution claimable at once: the next claim is the next attempt, the released one not counted",
    Effect.gen(function*() {
      const { owner, queue, store } = yield* seeded
      yield* store.insert(queued(owner, 1))
      const first = yield* claimSome("a", LEASE)
      yield* store.save(started(first.execution, 0), first.lease)
      yield* queue.release(first.lease)
      const second = yield* claimSome("b", LEASE)
      expect(second.execution.status).toBe("running")
      expect(first.lease).toMatchObject({ attempt: 1, counted: 1 })
      expect(second.lease).toMatchObject({ attempt: 2, counted: 1 })
      expect(second.lease.token).not.toBe(first.lease.token)
      // A release with a stale lease leaves the new holder alone.
      yield* queue.release(first.lease)
      expect(Option.isNone(yield* ExecutionQueue.claimOne(queue, "c", LEASE))).toBe(true)
      yield* queue.renew(second.lease, LEASE)
    })
  )

  test(
    "finished executions are never claimed, even when their lease time has passed",
    Effect.gen(function*() {
      const { owner, queue, store } = yield* seeded
      yield* store.insert(queued(owner, 1))
      const claim = yield* claimSome("a", LEASE)
      yield* store.save(completed(claim.execution, 5), claim.lease)
      yield* TestClock.adjust(2 * LEASE)
      expect(Option.isNone(yield* ExecutionQueue.claimOne(queue, "b", LEASE))).toBe(true)
    })
  )

  test(
    "concurrent claims never hand out an execution twice",
    Effect.gen(function*() {
      const { owner, queue, store } = yield* seeded
      for (let n = 1; n <= 20; n++) yield* store.insert(queued(owner, n))
      const claims = yield* Effect.all(
        Array.from({ length: 40 }, (_, i) => ExecutionQueue.claimOne(queue, `w${i % 4}`, LEASE)),
        { concurrency: "unbounded" }
      )
      const ids = claims.flatMap((c) => (Option.isSome(c) ? [c.value.execution.executionId] : []))
      expect(ids.length).toBe(20)
      expect(new Set(ids).size).toBe(20)
    })
  )

  test(
    "awaitWork waits for an insert, and for a release",
    Effect.gen(function*() {
      const { owner, queue, store } = yield* seeded
      const waiting = yield* Effect.fork(queue.awaitWork)
      yield* Effect.yieldNow()
      expect(Option.isNone(yield* Fiber.poll(waiting))).toBe(true)
      yield* store.insert(queued(owner, 1))
      yield* Fiber.join(waiting)
      const claim = yield* claimSome("a", LEASE)
      const again = yield* Effect.fork(queue.awaitWork)
      yield* Effect.yieldNow()
      expect(Option.isNone(yield* Fiber.poll(again))).toBe(true)
      yield* queue.release(claim.lease)
      yield* Fiber.join(again)
    })
  )

  test(
    "a batch claim takes workspaces in turn, oldest first within each, up to the limit",
    Effect.gen(function*() {
      const one = yield* seedOwner(1)
      const two = yield* seedOwner(2)
      const { queue, store } = yield* ports
      // Workspace 1's backlog is older than workspace 2's execution.
      for (const n of [1, 2, 3, 4]) yield* store.insert(queued(one, n))
      yield* store.insert(queued(two, 5))
      const first = yield* queue.claimBatch("a", LEASE, { limit: 3 })
      expect(first.length).toBe(3)
      expect(first.map((c) => c.execution.executionId).sort()).toEqual(
        [queued(one, 1), queued(one, 2), queued(two, 5)].map((r) => r.executionId).sort()
      )
      for (const claim of first) {
        expect(claim.lease).toMatchObject({ executionId: claim.execution.executionId, workerId: "a", attempt: 1 })
        expect(claim.lease.expiresAt).toBe(LEASE)
      }
      const rest = yield* queue.claimBatch("b", LEASE, { limit: 10 })
      expect(rest.map((c) => c.execution.executionId)).toEqual(
        [queued(one, 3), queued(one, 4)].map((r) => r.executionId)
      )
      expect(yield* queue.claimBatch("c", LEASE, { limit: 10 })).toEqual([])
    })
  )

  test(
    "one claim after another goes round the workspaces, so a backlog does not starve a newer workspace",
    Effect.gen(function*() {
      const one = yield* seedOwner(1)
      const two = yield* seedOwner(2)
      const store = yield* ExecutionStore.ExecutionStore
      for (let n = 1; n <= 10; n++) yield* store.insert(queued(one, n))
      yield* claimSome("a", LEASE)
      yield* store.insert(queued(two, 11))
      const next = yield* claimSome("a", LEASE)
      expect(next.execution.workspaceId).toBe(two.workspaceId)
      const after = yield* claimSome("a", LEASE)
      expect(after.execution).toEqual(attempted(queued(one, 2), 1))
    })
  )

  test(
    "the per-workspace cap counts live leases of every worker; an expired lease frees its place",
    Effect.gen(function*() {
      const one = yield* seedOwner(1)
      const two = yield* seedOwner(2)
      const { queue, store } = yield* ports
      for (let n = 1; n <= 6; n++) yield* store.insert(queued(one, n))
      yield* store.insert(queued(two, 7))
      const cap = { limit: 10, maxRunningPerWorkspace: 2 }
      const a = yield* queue.claimBatch("a", LEASE, { limit: 1, maxRunningPerWorkspace: 2 })
      const b = yield* queue.claimBatch("b", LEASE, cap)
      const ids = [...a, ...b].map((c) => c.execution.executionId).sort()
      expect(ids).toEqual([queued(one, 1), queued(one, 2), queued(two, 7)].map((r) => r.executionId).sort())
      expect(yield* queue.claimBatch("c", LEASE, cap)).toEqual([])
      // A finished execution frees its place at once.
      const done = [...a, ...b].find((c) => c.execution.workspaceId === one.workspaceId)!
      yield* store.save(completed(done.execution, 1), done.lease)
      const freed = yield* queue.claimBatch("c", LEASE, cap)
      expect(freed.map((c) => c.execution)).toEqual([attempted(queued(one, 3), 1)])
      // Leases that run out free their places too.
      yield* TestClock.adjust(LEASE)
      const later = yield* queue.claimBatch("d", LEASE, cap)
      expect(later.filter((c) => c.execution.workspaceId === one.workspaceId).length).toBe(2)
    })
  )

  test(
    "every read carries the attempt: absent (0 in the view) until claimed, one more per claim, released ones too, never written by save",
    Effect.gen(function*() {
      const { owner, queue, store } = yield* seeded
      const record = queued(owner, 1)
      const id = record.executionId
      /** The attempt as `get`, `getView` and `list` read it. */
      const reads = Effect.gen(function*() {
        const got = Option.getOrThrow(yield* store.get(id))
        const view = Option.getOrThrow(yield* store.getView(id))
        const [listed] = yield* store.list({ limit: 1 })
        return [got.attempt, view.attempt, listed!.attempt]
      })
      yield* store.insert(record)
      expect(Option.getOrThrow(yield* store.get(id))).toEqual(record)
      expect(yield* reads).toEqual([undefined, 0, undefined])

      const [first] = yield* queue.claimBatch("a", LEASE, { limit: 1 })
      expect(first!.execution.attempt).toBe(1)
      expect(first!.lease).toMatchObject({ attempt: 1, counted: 1 })
      expect(yield* reads).toEqual([1, 1, 1])
      // A record saved with another count does not change the queue's.
      yield* store.save({ ...first!.execution, outputs: record.outputs, attempt: 7 }, first!.lease)
      expect(yield* reads).toEqual([1, 1, 1])

      // The first worker is lost: the one that takes the execution over makes attempt 2.
      yield* TestClock.adjust(LEASE)
      const second = yield* claimSome("b", LEASE)
      expect(second.execution.attempt).toBe(2)
      expect(second.lease).toMatchObject({ attempt: 2, counted: 2 })
      expect(yield* reads).toEqual([2, 2, 2])

      // A release keeps the attempt shown and takes its claim out of the count: the next claim
      // is attempt 3, its second counted one.
      yield* queue.release(second.lease)
      expect(yield* reads).toEqual([2, 2, 2])
      const third = yield* claimSome("c", LEASE)
      expect(third.lease).toMatchObject({ attempt: 3, counted: 2 })
      yield* store.save(completed(third.execution, 5), third.lease)
      expect(yield* reads).toEqual([3, 3, 3])
      expect(Option.getOrThrow(yield* store.get(id))).toEqual(attempted(completed(third.execution, 5), 3))
    })
  )
})
