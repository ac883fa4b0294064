/**
 * Port: counters of the rate limiter, and its one in-memory adapter (`makeMemory`, `layerMemory`):
 * what `appexec serve` on SQLite counts in, and what the in-memory storage of tests provides.
 */
import { Context, Effect, Layer } from "effect"
import type { StorageError } from "./Errors.js"

/** The counts of one key after a hit: this window's (the hit included) and the window before's. */
export interface WindowCounts {
  readonly current: number
  /** Hits of the window that ended at `windowStart`; 0 when there were none. */
  readonly previous: number
}

/** Per-window counters, of which the limiter reads the current and the previous window. */
export class RateLimitStore extends Context.Tag("@appexec/core/RateLimitStore")<
  RateLimitStore,
  {
    /**
     * Adds one hit to the counter of `key` in the window starting at `windowStart` (epoch ms,
     * windows `windowMs` long) and returns that count, the hit included, with the count of the
     * window just before it. Counters of older windows may be dropped.
     */
    readonly hit: (key: string, windowStart: number, windowMs: number) => Effect.Effect<WindowCounts, StorageError>
  }
>() {}

/** Clients one window of the in-memory store remembers by default. */
export const DEFAULT_MAX_KEYS = 100_000

/**
 * A store in this process's memory, for requests that all arrive at one process: counting costs no
 * I/O, and the counters start again from zero when the process restarts (processes that must share
 * one limit use the storage's store). Memory is bounded: counters are grouped by window, windows
 * before the previous one are dropped whole, and a window holds at most `maxKeys` clients (the
 * longest idle forgotten first), so a flood of distinct addresses cannot grow the process.
 */
export const makeMemory = (maxKeys: number = DEFAULT_MAX_KEYS): RateLimitStore["Type"] => {
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

/** Layer of a fresh in-memory store (`makeMemory`). */
export const layerMemory = (maxKeys?: number): Layer.Layer<RateLimitStore> =>
  Layer.sync(RateLimitStore, () => makeMemory(maxKeys))
