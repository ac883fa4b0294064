/**
 * `RateLimitStore` in process memory. Counting costs no I/O, so `appexec serve` uses it (see
 * docs/http.md, *Rate limit*); the counters are this process's alone and start again from zero
 * when it restarts. Hosts whose processes must share one limit use a shared store instead
 * (`SqliteRateLimitStore` is part of `SqliteStorage`).
 *
 * Counters are grouped by window: a hit costs a lookup in its window's map and one in the
 * previous window's, and windows older than that are dropped whole, so memory and work stay
 * proportional to the clients of the live windows, however many there are.
 */
import { RateLimitStore } from "@appexec/core"
import { Effect, Layer } from "effect"

/** A fresh store. */
export const make = Effect.sync((): RateLimitStore.RateLimitStore["Type"] => {
  /** Window start → key → count. */
  const windows = new Map<number, Map<string, number>>()
  return {
    hit: (key, windowStart, windowMs) =>
      Effect.sync(() => {
        let counts = windows.get(windowStart)
        if (counts === undefined) {
          for (const start of windows.keys()) if (start < windowStart - windowMs) windows.delete(start)
          counts = new Map()
          windows.set(windowStart, counts)
        }
        const current = (counts.get(key) ?? 0) + 1
        counts.set(key, current)
        return { current, previous: windows.get(windowStart - windowMs)?.get(key) ?? 0 }
      })
  }
})

/** Layer of a fresh in-memory store. */
export const layer = Layer.effect(RateLimitStore.RateLimitStore, make)
