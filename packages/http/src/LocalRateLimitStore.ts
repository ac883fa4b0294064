/**
 * `RateLimitStore` in this process's memory, for a server whose requests all arrive at one
 * process (`appexec serve` on SQLite): counting costs no I/O. The counters start again from zero
 * when the process restarts; processes that must share one limit use the storage's store instead.
 *
 * Memory is bounded: counters are grouped by window, windows before the previous one are dropped
 * whole, and a window holds at most `maxKeys` clients (the longest-idle ones are forgotten
 * first), so a flood of distinct addresses cannot grow the process.
 */
import { RateLimitStore } from "@appexec/core"
import { Effect, Layer } from "effect"

/** Clients one window remembers by default. */
export const DEFAULT_MAX_KEYS = 100_000

/** A fresh store. */
export const make = (maxKeys: number = DEFAULT_MAX_KEYS): RateLimitStore.RateLimitStore["Type"] => {
  /** Window start → key → count; a key is moved to the end of its map on every hit. */
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
        counts.delete(key)
        counts.set(key, current)
        if (counts.size > maxKeys) counts.delete(counts.keys().next().value!)
        return { current, previous: windows.get(windowStart - windowMs)?.get(key) ?? 0 }
      })
  }
}

/** Layer of a fresh store. */
export const layer = (maxKeys?: number): Layer.Layer<RateLimitStore.RateLimitStore> =>
  Layer.sync(RateLimitStore.RateLimitStore, () => make(maxKeys))
