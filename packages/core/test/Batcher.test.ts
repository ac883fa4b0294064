import { describe, expect, it } from "@effect/vitest"
import { Deferred, Effect, Exit, Fiber, Scope } from "effect"
import * as Batcher from "../src/internal/Batcher.js"

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
      yield* Effect.yieldNow()
      const rest = yield* Effect.fork(Effect.all([submit(2), submit(3)], { concurrency: "unbounded" }))
      yield* Effect.yieldNow()
      yield* Deferred.succeed(gate, undefined)
      expect(yield* Fiber.join(first)).toBe(2)
      expect(yield* Fiber.join(rest)).toEqual([4, 6])
      expect(batches).toEqual([[1], [2, 3]])
    }).pipe(Effect.scoped))

  it.effect("no caller waits forever when the scope closes mid-batch; later submissions are interrupted", () =>
    Effect.gen(function*() {
      const scope = yield* Scope.make()
      const submit = yield* Batcher.make<number, number, never>({
        maxSize: 10,
        key: String,
        // A write that never ends: the database hangs, then the process shuts down.
        write: () => Effect.never,
        isolate: () => false
      }).pipe(Scope.extend(scope))
      const inFlight = yield* Effect.fork(submit(1))
      yield* Effect.yieldNow()
      const waiting = yield* Effect.fork(submit(2))
      yield* Effect.yieldNow()
      yield* Scope.close(scope, Exit.void)
      const [a, b] = [yield* Fiber.await(inFlight), yield* Fiber.await(waiting)]
      expect(Exit.isInterrupted(a)).toBe(true)
      expect(Exit.isInterrupted(b)).toBe(true)
      expect(Exit.isInterrupted(yield* Effect.exit(submit(3)))).toBe(true)
    }))
})
