/**
 * The rate limiter (docs/api.md#rate-limit): a sliding window per client key over the
 * rate-limit store, reading time only through `Clock`.
 *
 * The count of the last `windowMs` is estimated from two fixed-window counters: all of the
 * current window's hits and the share of the previous window's that still falls inside the
 * sliding window (`previous × (windowMs − elapsed) / windowMs`). A client that spent its limit at
 * the end of one window therefore gets almost nothing at the start of the next, instead of the
 * whole limit again as with a fixed window; refused requests are counted too.
 *
 * The previous window's share counts at most `limit − 1` requests, however many that window saw.
 * A client that kept sending while refused therefore finds room for one request again within one
 * window at most: `Retry-After` never exceeds the window, and a request sent after waiting it is
 * allowed (without the cap, 150 counted requests would keep it refused at the start of the next
 * window and beyond). The cap lets at most one request more through across a window boundary.
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
   * allowed again if the client sent nothing meanwhile. Never more than the window.
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
  const untilWindowEnd = windowMs - elapsed
  const previous = Math.min(counts.previous, Math.max(0, limit - 1))
  // Compared in requests × milliseconds, so that the boundary of "allowed" is exact.
  const weighted = previous * untilWindowEnd
  const allowed = weighted + counts.current * windowMs <= limit * windowMs
  let waitMs = untilWindowEnd
  const room = limit - counts.current - 1
  if (!allowed && room >= 0 && previous > 0) {
    // One more request fits later in this window, once the previous window's share is down to
    // `room`: at the first elapsed x with previous × (windowMs − x) ≤ room × windowMs. Otherwise
    // it fits as the next window begins, where the previous share is below `limit`.
    waitMs = windowMs - Math.floor((room * windowMs) / previous) - elapsed
  }
  return {
    allowed,
    limit,
    remaining: Math.max(0, Math.floor(limit - weighted / windowMs - counts.current)),
    resetSeconds: Math.max(1, Math.ceil(waitMs / 1000))
  }
}

/** Where the window of `now` (epoch milliseconds) starts: windows of `windowMs` from the epoch. */
export const windowStartOf = (now: number, windowMs: number): number => now - (now % windowMs)

/** Counts one request of `key` in `store` at `now` (epoch milliseconds) and decides whether it is allowed. */
export const consumeAt = (
  store: RateLimitStore["Type"],
  key: string,
  policy: RateLimitPolicy,
  now: number
): Effect.Effect<RateLimitDecision, StorageError> => {
  const windowStart = windowStartOf(now, policy.windowMs)
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
