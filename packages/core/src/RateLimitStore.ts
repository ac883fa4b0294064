/**
 * Port: counters of the rate limiter.
 */
import { Context, type Effect } from "effect"
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
