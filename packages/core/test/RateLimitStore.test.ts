import { MemoryStorage } from "@appexec/testing"
import { RateLimitStoreContract } from "@appexec/testing/contracts"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { RateLimitStore } from "../src/index.js"

RateLimitStoreContract.suite(
  "in memory (RateLimitStore.layerMemory)",
  () => Layer.merge(MemoryStorage.layer, RateLimitStore.layerMemory())
)

const current = (counts: { readonly current: number }) => counts.current

describe("in-memory rate-limit store", () => {
  it.effect("keeps counting right with many clients in one window, and starts afresh in the next", () =>
    Effect.gen(function*() {
      const store = RateLimitStore.makeMemory()
      for (let i = 0; i < 25_000; i++) {
        expect(current(yield* store.hit(`10.0.${i >> 8}.${i & 255}`, 60_000, 60_000))).toBe(1)
      }
      expect(yield* store.hit("10.0.0.0", 60_000, 60_000)).toEqual({ current: 2, previous: 0 })
      expect(yield* store.hit("10.0.0.0", 120_000, 60_000)).toEqual({ current: 1, previous: 2 })
      expect(yield* store.hit("10.0.0.0", 240_000, 60_000)).toEqual({ current: 1, previous: 0 })
    }))

  it.effect("holds at most maxKeys clients per window, forgetting the longest idle first", () =>
    Effect.gen(function*() {
      const store = RateLimitStore.makeMemory(3)
      for (const key of ["a", "b", "c"]) yield* store.hit(key, 0, 60_000)
      expect(current(yield* store.hit("a", 0, 60_000))).toBe(2)
      // "b" is now the longest idle and makes room for "d".
      expect(current(yield* store.hit("d", 0, 60_000))).toBe(1)
      expect(current(yield* store.hit("a", 0, 60_000))).toBe(3)
      expect(current(yield* store.hit("c", 0, 60_000))).toBe(2)
      expect(current(yield* store.hit("b", 0, 60_000))).toBe(1)
    }))
})
