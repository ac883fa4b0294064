/**
 * Port: counters of the rate limiter.
 */
import { Context, type Effect } from "effect"
import type { StorageError } from "./Errors.js"

/** Fixed-window counters. */
export class RateLimitStore extends Context.Tag("@appexec/core/RateLimitStore")<
  RateLimitStore,
  {
    /**
     * Adds one hit to the counter of `key` in the window starting at `windowStart` (epoch ms) and
     * returns the count including it. Counters of windows that ended before `expireBefore` may be dropped.
     */
    readonly hit: (key: string, windowStart: number, expireBefore: number) => Effect.Effect<number, StorageError>
  }
>() {}
