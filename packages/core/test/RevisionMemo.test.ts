import { describe, expect, it } from "@effect/vitest"
import { Deferred, Effect, Exit, Fiber, FiberId, Scope } from "effect"
import * as RevisionMemo from "../src/RevisionMemo.js"

/** Lets forked calls run up to their wait. */
const settle = Effect.repeatN(Effect.yieldNow(), 10)

/** Waits for the end of this turn of the event loop: a read kept for the turn is forgotten. */
const nextTurn = Effect.promise(() => new Promise<void>((resolve) => setImmediate(resolve)))

/** A read over a network, counted: it answers what `store` held when it began, once its gate opens. */
const gatedRead = (store: { revision: number }) => {
  const gates: Array<Deferred.Deferred<void>> = []
  const read = Effect.suspend(() => {
    const seen = store.revision
    const gate = Deferred.unsafeMake<void>(FiberId.none)
    gates.push(gate)
    return Effect.as(Deferred.await(gate), seen)
  })
  return { read, gates }
}

describe("RevisionMemo", () => {
  it.effect("a call never takes a read that was under way when it began: it waits for the next, shared", () =>
    Effect.gen(function*() {
      let revision = 1
      let reads = 0
      const gates: Array<Deferred.Deferred<void>> = []
      // A read over a network: it answers what the store held when it began, once its gate opens.
      const read = Effect.suspend(() => {
        reads += 1
        const seen = revision
        const gate = Deferred.unsafeMake<void>(FiberId.none)
        gates.push(gate)
        return Effect.as(Deferred.await(gate), seen)
      })
      const memo = yield* RevisionMemo.make(read)
      const first = yield* Effect.fork(memo.get)
      yield* settle
      // A write commits while the first read is under way; the calls after it must see it.
      revision = 2
      const later = yield* Effect.fork(Effect.all([memo.get, memo.get], { concurrency: "unbounded" }))
      yield* settle
      expect(reads).toBe(1)
      yield* Deferred.succeed(gates[0]!, undefined)
      expect(yield* Fiber.join(first)).toBe(1)
      yield* settle
      // One more read serves both later calls.
      expect(reads).toBe(2)
      yield* Deferred.succeed(gates[1]!, undefined)
      expect(yield* Fiber.join(later)).toEqual([2, 2])
    }).pipe(Effect.scoped))

  it.effect("the calls of one request share a read that began after it, in later turns too; a later request reads again", () =>
    Effect.gen(function*() {
      const store = { revision: 1 }
      const { gates, read } = gatedRead(store)
      const memo = yield* RevisionMemo.make(read)
      const request = yield* Effect.fork(RevisionMemo.withinRequest(Effect.gen(function*() {
        const first = yield* memo.get
        yield* nextTurn
        // The request's second call (its app, after its key) takes the read its first made.
        return [first, yield* memo.get]
      })))
      yield* settle
      yield* Deferred.succeed(gates[0]!, undefined)
      expect(yield* Fiber.join(request)).toEqual([1, 1])
      expect(gates.length).toBe(1)
      // A write committed elsewhere; a request that begins after it does not take the old read.
      store.revision = 2
      yield* nextTurn
      const later = yield* Effect.fork(RevisionMemo.withinRequest(memo.get))
      yield* settle
      expect(gates.length).toBe(2)
      yield* Deferred.succeed(gates[1]!, undefined)
      expect(yield* Fiber.join(later)).toBe(2)
    }).pipe(Effect.scoped))

  it.effect("a call of a request joins a read under way that began after its request did", () =>
    Effect.gen(function*() {
      const { gates, read } = gatedRead({ revision: 1 })
      const memo = yield* RevisionMemo.make(read)
      const go = yield* Deferred.make<void>()
      const request = yield* Effect.fork(RevisionMemo.withinRequest(Effect.zipRight(Deferred.await(go), memo.get)))
      yield* settle
      // A read begins after the request did, for a call outside it.
      const other = yield* Effect.fork(memo.get)
      yield* settle
      yield* Deferred.succeed(go, undefined)
      yield* settle
      expect(gates.length).toBe(1)
      yield* Deferred.succeed(gates[0]!, undefined)
      expect(yield* Fiber.join(request)).toBe(1)
      expect(yield* Fiber.join(other)).toBe(1)
      expect(gates.length).toBe(1)
    }).pipe(Effect.scoped))

  it.effect("within a request, a write through this process makes the next call read again", () =>
    Effect.gen(function*() {
      const store = { revision: 1 }
      const { gates, read } = gatedRead(store)
      const memo = yield* RevisionMemo.make(read)
      const request = yield* Effect.fork(RevisionMemo.withinRequest(Effect.gen(function*() {
        const first = yield* memo.get
        store.revision = 2
        yield* memo.invalidate
        yield* nextTurn
        return [first, yield* memo.get]
      })))
      yield* settle
      yield* Deferred.succeed(gates[0]!, undefined)
      // The request's own turn ends after this one's.
      yield* nextTurn
      yield* nextTurn
      yield* settle
      expect(gates.length).toBe(2)
      yield* Deferred.succeed(gates[1]!, undefined)
      expect(yield* Fiber.join(request)).toEqual([1, 2])
    }).pipe(Effect.scoped))

  it.effect("a read that answers at once is kept for the turn, until invalidated", () =>
    Effect.gen(function*() {
      let reads = 0
      const memo = yield* RevisionMemo.make(Effect.sync(() => ++reads))
      expect(yield* memo.get).toBe(1)
      expect(yield* memo.get).toBe(1)
      yield* memo.invalidate
      expect(yield* memo.get).toBe(2)
      expect(reads).toBe(2)
    }).pipe(Effect.scoped))

  it.effect("calls waiting for a read end interrupted when the scope closes, and so do later waits", () =>
    Effect.gen(function*() {
      const scope = yield* Scope.make()
      const started = yield* Deferred.make<void>()
      // The store hangs, then the process shuts down.
      const memo = yield* RevisionMemo.make(Effect.zipRight(Deferred.succeed(started, undefined), Effect.never)).pipe(
        Scope.extend(scope)
      )
      const leader = yield* Effect.fork(memo.get)
      yield* Deferred.await(started)
      const waiting = yield* Effect.fork(memo.get)
      yield* settle
      yield* Scope.close(scope, Exit.void)
      expect(Exit.isInterrupted(yield* Fiber.await(waiting))).toBe(true)
      expect(Exit.isInterrupted(yield* Effect.exit(memo.get))).toBe(true)
      yield* Fiber.interrupt(leader)
    }))
})
