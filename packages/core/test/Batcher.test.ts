import { describe, expect, it } from "@effect/vitest"
import { Deferred, Effect, Either, Exit, Fiber, Scope } from "effect"
import * as Batcher from "../src/Batcher.js"

/** Lets the forked submissions run up to their wait. */
const settle = Effect.repeatN(Effect.yieldNow(), 10)

describe("Batcher", () => {
  it.effect("writes what arrives while a batch is under way in the next batch, answers in order", () =>
    Effect.gen(function*() {
      const batches: Array<ReadonlyArray<number>> = []
      const gate = yield* Deferred.make<void>()
      const submit = yield* Batcher.make<number, number, never>({
        maxSize: 10,
        key: String,
        write: (items) =>
          Effect.zipRight(
            Effect.sync(() => batches.push(items)),
            Effect.as(batches.length === 0 ? Deferred.await(gate) : Effect.void, items.map((n) => n * 2))
          ),
        isolate: () => false
      })
      const first = yield* Effect.fork(submit(1))
      yield* settle
      const rest = yield* Effect.fork(Effect.all([submit(2), submit(3)], { concurrency: "unbounded" }))
      yield* settle
      yield* Deferred.succeed(gate, undefined)
      expect(yield* Fiber.join(first)).toBe(2)
      expect(yield* Fiber.join(rest)).toEqual([4, 6])
      expect(batches).toEqual([[1], [2, 3]])
    }).pipe(Effect.scoped))

  it.effect("the submissions of one turn go in one write, the first one's included", () =>
    Effect.gen(function*() {
      const batches: Array<ReadonlyArray<number>> = []
      const submit = yield* Batcher.make<number, number, never>({
        maxSize: 10,
        key: String,
        write: (items) => Effect.as(Effect.sync(() => batches.push(items)), items.map((n) => n * 2))
      })
      // Nothing under way: the first submission starts the write, which waits for the others ready with it.
      expect(yield* Effect.all([submit(1), submit(2), submit(3)], { concurrency: "unbounded" })).toEqual([2, 4, 6])
      expect(batches).toEqual([[1, 2, 3]])
      // Alone, a submission is written alone.
      expect(yield* submit(4)).toBe(8)
      expect(batches).toEqual([[1, 2, 3], [4]])
    }).pipe(Effect.scoped))

  it.effect("no queued caller waits forever when the scope closes mid-batch; later submissions are interrupted", () =>
    Effect.gen(function*() {
      const scope = yield* Scope.make()
      const started = yield* Deferred.make<void>()
      const submit = yield* Batcher.make<number, number, never>({
        maxSize: 10,
        // A write that never ends: the database hangs, then the process shuts down.
        write: () => Effect.zipRight(Deferred.succeed(started, undefined), Effect.never)
      }).pipe(Scope.extend(scope))
      // The first write runs in a fiber of the scope: its caller ends interrupted when the scope closes.
      const inFlight = yield* Effect.fork(submit(1))
      yield* Deferred.await(started)
      const waiting = yield* Effect.fork(submit(2))
      yield* settle
      yield* Scope.close(scope, Exit.void)
      expect(Exit.isInterrupted(yield* Fiber.await(inFlight))).toBe(true)
      expect(Exit.isInterrupted(yield* Fiber.await(waiting))).toBe(true)
      expect(Exit.isInterrupted(yield* Effect.exit(submit(3)))).toBe(true)
    }))

  it.effect("a batch that fails on a refused item is written again item by item; other failures fail all", () =>
    Effect.gen(function*() {
      const gate = yield* Deferred.make<void>()
      const later = yield* Deferred.make<void>()
      const writes: Array<ReadonlyArray<number>> = []
      const submit = yield* Batcher.make<number, number, string>({
        maxSize: 10,
        key: String,
        write: (items) =>
          Effect.gen(function*() {
            writes.push(items)
            if (writes.length === 1) yield* Deferred.await(gate)
            if (items.includes(5)) yield* Deferred.await(later)
            if (items.includes(13)) return yield* Effect.fail(items.length > 1 ? "refused" : "bad row")
            if (items.includes(99)) return yield* Effect.fail("down")
            return items.map((n) => n + 1)
          }),
        isolate: (error) => error === "refused"
      })
      const first = yield* Effect.fork(submit(1))
      yield* settle
      const batch = yield* Effect.fork(
        Effect.all([submit(2), submit(13), submit(2)].map(Effect.either), { concurrency: "unbounded" })
      )
      yield* settle
      yield* Deferred.succeed(gate, undefined)
      expect(yield* Fiber.join(first)).toBe(2)
      const [a, bad, again] = yield* Fiber.join(batch)
      expect(a).toEqual(Either.right(3))
      expect(bad).toEqual(Either.left("bad row"))
      // The same key twice never goes in one write: the second 2 waited for the next.
      expect(again).toEqual(Either.right(3))
      expect(writes).toEqual([[1], [2, 13], [2], [13], [2]])
      // Any other failure (the database down) fails every item of its batch, written once.
      const held = yield* Effect.fork(submit(5))
      yield* settle
      const down = yield* Effect.fork(
        Effect.all([submit(6), submit(99), submit(7)].map(Effect.either), { concurrency: "unbounded" })
      )
      yield* settle
      yield* Deferred.succeed(later, undefined)
      expect(yield* Fiber.join(held)).toBe(6)
      expect(yield* Fiber.join(down)).toEqual([Either.left("down"), Either.left("down"), Either.left("down")])
      expect(writes.slice(5)).toEqual([[5], [6, 99, 7]])
    }).pipe(Effect.scoped))

  it.effect("without a key, equal items go in one write", () =>
    Effect.gen(function*() {
      const gate = yield* Deferred.make<void>()
      const writes: Array<ReadonlyArray<string>> = []
      const submit = yield* Batcher.make<string, number, never>({
        maxSize: 2,
        write: (items) =>
          Effect.zipRight(
            Effect.sync(() => writes.push(items)),
            Effect.as(writes.length === 0 ? Deferred.await(gate) : Effect.void, items.map((_, i) => i))
          )
      })
      const first = yield* Effect.fork(submit("a"))
      yield* settle
      const rest = yield* Effect.fork(Effect.all(["a", "a", "a"].map(submit), { concurrency: "unbounded" }))
      yield* settle
      yield* Deferred.succeed(gate, undefined)
      yield* Fiber.join(first)
      // At most `maxSize` a write: the third waits for the next.
      expect([...(yield* Fiber.join(rest))].sort()).toEqual([0, 0, 1])
      expect(writes).toEqual([["a"], ["a", "a"], ["a"]])
    }).pipe(Effect.scoped))
})
