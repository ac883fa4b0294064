/**
 * The rate limiter (docs/api.md#rate-limit): a sliding window per client key over the
 * rate-limit store, reading time only through `Clock`.
 *
 * The count of the last `windowMs` is estimated from two fixed-window counters: all of the
 * current window's hits and the share of the previous window's that still falls inside the
 * sliding window (`previous × (windowMs − elapsed) / windowMs`). A client that spent its limit at
 * the end of one window therefore gets almost nothing at the start of the next, instead of the
 * whole limit again as with a fixed window; refused requests are counted too.
 */
import { Clock, Effect } from "effect"
import type { StorageError } from "./Errors.js"
import { RateLimitStore, type WindowCounts } from "./RateLimitStore.js"

/** The verdict for one request, with what the `RateLimit-*` headers carry. */
export interface RateLimitDecision {
  readonly allowed: boolean
  /** `RateLimit-Limit`. */
  readonly limit: number
  /** `RateLimit-Remaining`: requests left in the sliding window after this one. */
  readonly remaining: number
  /**
   * `RateLimit-Reset` (and `Retry-After` when refused), in whole seconds, at least 1: for an
   * allowed request, until the current window ends; for a refused one, until a request would be
   * allowed again if the client sent nothing meanwhile.
   */
  readonly resetSeconds: number
}

/** Window settings: `limit` requests per `windowMs`. */
export interface RateLimitPolicy {
  readonly limit: number
  readonly windowMs: number
}

/** The decision for counts read at `now` (the window of `now` starts at `windowStart`). */
export const decide = (
  policy: RateLimitPolicy,
  now: number,
  windowStart: number,
  counts: WindowCounts
): RateLimitDecision => {
  const { limit, windowMs } = policy
  const elapsed = now - windowStart
  const estimate = counts.previous * ((windowMs - elapsed) / windowMs) + counts.current
  const allowed = estimate <= limit
  const untilWindowEnd = windowMs - elapsed
  let waitMs = untilWindowEnd
  if (!allowed) {
    // When one more request fits: later in this window as the previous window's share slides
    // out, or in the next window once this window's own share has slid out far enough.
    const room = limit - counts.current - 1
    if (room >= 0 && counts.previous > 0) {
      waitMs = windowMs * (1 - room / counts.previous) - elapsed
    } else {
      waitMs = untilWindowEnd + Math.max(0, windowMs * (1 - (limit - 1) / counts.current))
    }
  }
  return {
    allowed,
    limit,
    remaining: Math.max(0, Math.floor(limit - estimate)),
    resetSeconds: Math.max(1, Math.ceil(waitMs / 1000))
  }
}

/** Counts one request of `key` in `store` at `now` (epoch milliseconds) and decides whether it is allowed. */
export const consumeAt = (
  store: RateLimitStore["Type"],
  key: string,
  policy: RateLimitPolicy,
  now: number
): Effect.Effect<RateLimitDecision, StorageError> => {
  const windowStart = now - (now % policy.windowMs)
  return Effect.map(
    store.hit(key, windowStart, policy.windowMs),
    (counts) => decide(policy, now, windowStart, counts)
  )
}

/** Counts one request of `key` in `store` and decides whether it is allowed. */
export const consumeIn = (
  store: RateLimitStore["Type"],
  key: string,
  policy: RateLimitPolicy
): Effect.Effect<RateLimitDecision, StorageError> =>
  Effect.flatMap(Clock.currentTimeMillis, (now) => consumeAt(store, key, policy, now))

/** Counts one request of `key` and decides whether it is allowed. */
export const consume = (
  key: string,
  policy: RateLimitPolicy
): Effect.Effect<RateLimitDecision, StorageError, RateLimitStore> =>
  Effect.flatMap(RateLimitStore, (store) => consumeIn(store, key, policy))
