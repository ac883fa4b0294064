/**
 * Contract of `RateLimitStore`: one counter per key and window, a new window starts at one, and
 * each hit also reports the count of the window just before. Under core's `RateLimiter`, the
 * store answers as the spec's limit says: `Retry-After` within the window, and a client that waits
 * it is allowed again.
 */
import { RateLimiter, RateLimitStore } from "@appexec/core"
import { describe, expect } from "@effect/vitest"
import { Duration, Effect, TestClock } from "effect"
import { type MakeStorage, storageTest } from "../internal/StorageFixtures.js"

/** Runs the rate-limit-store contract against fresh storage from `makeStorage` for every test. */
export const suite = (name: string, makeStorage: MakeStorage) =>
  describe(`RateLimitStore contract: ${name}`, () => {
    const test = storageTest(makeStorage)

    test(
      "counts hits per key within a window, starts again in the next, and reports the previous window's count",
      Effect.gen(function*() {
        const store = yield* RateLimitStore.RateLimitStore
        const hit = (key: string, window: number) => store.hit(key, window, 60_000)
        expect([yield* hit("a", 0), yield* hit("a", 0), yield* hit("b", 0), yield* hit("a", 0)]).toEqual([
          { current: 1, previous: 0 },
          { current: 2, previous: 0 },
          { current: 1, previous: 0 },
          { current: 3, previous: 0 }
        ])
        expect([yield* hit("a", 60_000), yield* hit("a", 60_000), yield* hit("b", 60_000)]).toEqual([
          { current: 1, previous: 3 },
          { current: 2, previous: 3 },
          { current: 1, previous: 1 }
        ])
        // A window that is not the one just before does not count.
        expect(yield* hit("a", 180_000)).toEqual({ current: 1, previous: 0 })
        expect(yield* hit("b", 240_000)).toEqual({ current: 1, previous: 0 })
      })
    )

    test(
      "under the limiter, Retry-After never exceeds the window and a client that waits it is allowed again",
      Effect.gen(function*() {
        const store = yield* RateLimitStore.RateLimitStore
        const policy = { limit: 100, windowMs: 60_000 }
        // Each pattern: where in the window it starts, then bursts of requests with waits between.
        const patterns: ReadonlyArray<ReadonlyArray<readonly [waitMs: number, requests: number]>> = [
          [[10_000, 101]],
          [[10_000, 150]],
          [[59_000, 100], [2_000, 60]],
          [[500, 100], [30_000, 100]],
          [[45_000, 80], [20_000, 90], [1_000, 40]]
        ]
        for (const [n, pattern] of patterns.entries()) {
          const key = `203.0.113.${n}`
          let last: RateLimiter.RateLimitDecision | undefined
          for (const [waitMs, requests] of pattern) {
            yield* TestClock.adjust(Duration.millis(waitMs))
            for (let i = 0; i < requests; i++) last = yield* RateLimiter.consumeIn(store, key, policy)
          }
          expect(last?.allowed).toBe(false)
          expect(last?.resetSeconds).toBeGreaterThanOrEqual(1)
          expect(last?.resetSeconds).toBeLessThanOrEqual(60)
          yield* TestClock.adjust(Duration.seconds(last?.resetSeconds ?? 0))
          expect((yield* RateLimiter.consumeIn(store, key, policy)).allowed).toBe(true)
          // Each pattern has a key of its own; time moves on between them.
          yield* TestClock.adjust("2 minutes")
        }
      })
    )

    test(
      "concurrent hits are all counted",
      Effect.gen(function*() {
        const store = yield* RateLimitStore.RateLimitStore
        const counts = yield* Effect.all(
          Array.from({ length: 50 }, () => store.hit("ip", 0, 60_000)),
          { concurrency: "unbounded" }
        )
        expect(counts.map((c) => c.current).sort((a, b) => a - b)).toEqual(Array.from({ length: 50 }, (_, i) => i + 1))
      })
    )

    test(
      "concurrent hits of many keys, and of one key in two windows, are each counted exactly, with the previous window's count",
      Effect.gen(function*() {
        const store = yield* RateLimitStore.RateLimitStore
        for (let i = 0; i < 3; i++) yield* store.hit("a", 0, 60_000)
        const hits = Array.from(
          { length: 60 },
          (_, i) => ({ key: ["a", "b", "c"][i % 3]!, windowStart: i < 45 ? 60_000 : 120_000 })
        )
        const counts = yield* Effect.all(
          hits.map(({ key, windowStart }) =>
            Effect.map(store.hit(key, windowStart, 60_000), (c) => ({ key, windowStart, ...c }))
          ),
          { concurrency: "unbounded" }
        )
        for (const key of ["a", "b", "c"]) {
          const first = counts.filter((c) => c.key === key && c.windowStart === 60_000)
          const second = counts.filter((c) => c.key === key && c.windowStart === 120_000)
          // Each key's hits of a window took the counts 1..n, whatever the order they were counted in.
          expect(first.map((c) => c.current).sort((x, y) => x - y)).toEqual(Array.from({ length: 15 }, (_, i) => i + 1))
          expect(first.every((c) => c.previous === (key === "a" ? 3 : 0))).toBe(true)
          // A hit of the later window counts from 1 there (or on top of its own window, never on the earlier one's).
          expect(second.map((c) => c.current).sort((x, y) => x - y)).toEqual(Array.from({ length: 5 }, (_, i) => i + 1))
        }
        expect(yield* store.hit("b", 120_000, 60_000)).toEqual({ current: 6, previous: 15 })
      })
    )
  })
