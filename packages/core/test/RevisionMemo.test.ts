import { describe, expect, it } from "@effect/vitest"
import { Deferred, Effect, Exit, Fiber, FiberId, Scope } from "effect"
import * as RevisionMemo from "../src/RevisionMemo.js"

/** Lets forked calls run up to their wait. */
const settle = Effect.repeatN(Effect.yieldNow(), 10)

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
