/**
 * The rate limiter (docs/api.md#rate-limit): a fixed window per client key over the rate-limit store,
 * reading time only through `Clock`.
 */
import { Effect } from "effect"
import type { StorageError } from "./Errors.js"
import { RateLimitStore } from "./RateLimitStore.js"

/** The verdict for one request, with what the `RateLimit-*` headers carry. */
export interface RateLimitDecision {
  readonly allowed: boolean
  /** `RateLimit-Limit`. */
  readonly limit: number
  /** `RateLimit-Remaining`: requests left in this window after this one. */
  readonly remaining: number
  /** `RateLimit-Reset`: whole seconds until the window ends (at least 1). */
  readonly resetSeconds: number
}

/** Window settings: `limit` requests per `windowMs`. */
export interface RateLimitPolicy {
  readonly limit: number
  readonly windowMs: number
}

/** Counts one request of `key` and decides whether it is allowed. */
export const consume = (
  key: string,
  policy: RateLimitPolicy
): Effect.Effect<RateLimitDecision, StorageError, RateLimitStore> =>
  Effect.gen(function*() {
    const store = yield* RateLimitStore
    const now = yield* Effect.clockWith((clock) => clock.currentTimeMillis)
    const windowStart = now - (now % policy.windowMs)
    const count = yield* store.hit(key, windowStart, windowStart)
    return {
      allowed: count <= policy.limit,
      limit: policy.limit,
      remaining: Math.max(0, policy.limit - count),
      resetSeconds: Math.max(1, Math.ceil((windowStart + policy.windowMs - now) / 1000))
    }
  })
