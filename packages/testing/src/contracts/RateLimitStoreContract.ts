/**
 * Contract of `RateLimitStore`: one counter per key and window; a new window starts at one.
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
      "counts hits per key within a window and starts again in the next",
      Effect.gen(function*() {
        const store = yield* RateLimitStore.RateLimitStore
        const hit = (key: string, window: number) => store.hit(key, window, window - 60_000)
        expect([yield* hit("a", 0), yield* hit("a", 0), yield* hit("b", 0), yield* hit("a", 0)]).toEqual([1, 2, 1, 3])
        expect([yield* hit("a", 60_000), yield* hit("a", 60_000), yield* hit("b", 60_000)]).toEqual([1, 2, 1])
      })
    )

    test(
      "concurrent hits are all counted",
      Effect.gen(function*() {
        const store = yield* RateLimitStore.RateLimitStore
        const counts = yield* Effect.all(
          Array.from({ length: 50 }, () => store.hit("ip", 0, -60_000)),
          { concurrency: "unbounded" }
        )
        expect([...counts].sort((a, b) => a - b)).toEqual(Array.from({ length: 50 }, (_, i) => i + 1))
      })
    )
  })
