/**
 * `RateLimitStore` in process memory: one fixed-window counter per key in a `Map`. Counting costs
 * no I/O, so `appexec serve` uses it (see docs/http.md, *Rate limit*); the counters are this
 * process's alone and start again from zero when it restarts. Hosts whose processes must share
 * one limit use a shared store instead (`SqliteRateLimitStore` is part of `SqliteStorage`).
 */
import { Effect, Layer } from "effect"
import { RateLimitStore } from "./RateLimitStore.js"

/** Counters kept before ended windows are swept. */
const SWEEP_ABOVE = 10_000

/** A fresh store. */
export const make = Effect.sync((): RateLimitStore["Type"] => {
  const counters = new Map<string, { windowStart: number; count: number }>()
  return {
    hit: (key, windowStart, expireBefore) =>
      Effect.sync(() => {
        const current = counters.get(key)
        if (current !== undefined && current.windowStart === windowStart) return ++current.count
        counters.set(key, { windowStart, count: 1 })
        if (counters.size > SWEEP_ABOVE) {
          for (const [k, v] of counters) if (v.windowStart < expireBefore) counters.delete(k)
        }
        return 1
      })
  }
})

/** Layer of a fresh in-memory store. */
export const layer = Layer.effect(RateLimitStore, make)
