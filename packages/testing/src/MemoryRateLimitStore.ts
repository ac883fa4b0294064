/**
 * In-memory `RateLimitStore`.
 */
import { RateLimitStore } from "@appexec/core"
import { Effect, Layer } from "effect"

/** A fresh rate-limit store. */
export const make = Effect.sync((): RateLimitStore.RateLimitStore["Type"] => {
  const counters = new Map<string, { windowStart: number; count: number }>()
  return {
    hit: (key, windowStart, expireBefore) =>
      Effect.sync(() => {
        const current = counters.get(key)
        const count = current !== undefined && current.windowStart === windowStart ? current.count + 1 : 1
        counters.set(key, { windowStart, count })
        if (counters.size > 10_000) {
          for (const [k, v] of counters) if (v.windowStart < expireBefore) counters.delete(k)
        }
        return count
      })
  }
})

/** Layer of a fresh in-memory rate-limit store. */
export const layer = Layer.effect(RateLimitStore.RateLimitStore, make)
