/**
 * Contract of `RateLimitStore`: one counter per key and window, a new window starts at one, and
 * each hit also reports the count of the window just before.
 */
import { RateLimitStore } from "@appexec/core"
import { describe, expect } from "@effect/vitest"
import { Effect } from "effect"
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
  })
