/**
 * The rate limit of every `/v1` request: a fixed window per client IP
 * over core's `RateLimiter`, counted before authentication. The client IP is the socket address,
 * or the last `X-Forwarded-For` address (the one a trusted proxy appended) when `trustProxy` is set.
 */
import type { RateLimiter } from "@appexec/core"
import type { ServerRequest } from "./internal/Exchange.js"

/** Settings of the limit. */
export interface RateLimitOptions {
  /** Requests per window and client (default 100). */
  readonly limit?: number
  /** Window length in milliseconds (default one minute). */
  readonly windowMs?: number
  /** Take the client IP from `X-Forwarded-For` (set only behind a proxy you trust). */
  readonly trustProxy?: boolean
}

/** The defaults: 100 requests per minute per IP. */
export const defaults = { limit: 100, windowMs: 60_000, trustProxy: false } as const

/** The policy `options` describe. */
export const policyOf = (options: RateLimitOptions = {}): RateLimiter.RateLimitPolicy => ({
  limit: options.limit ?? defaults.limit,
  windowMs: options.windowMs ?? defaults.windowMs
})

/**
 * The address a request is counted under: the socket's peer, or with `trustProxy` the address
 * the trusted proxy in front saw, which it appends as the **last** `X-Forwarded-For` entry.
 * Entries to its left were written by the client and could be anything, so they never count.
 */
export const clientIp = (request: Pick<ServerRequest, "headers" | "remoteAddress">, trustProxy: boolean): string => {
  if (trustProxy) {
    const forwarded = request.headers["x-forwarded-for"]?.split(",").at(-1)?.trim()
    if (forwarded !== undefined && forwarded !== "") return forwarded
  }
  return request.remoteAddress ?? "unknown"
}

/** The `RateLimit-*` headers of a decision, and `Retry-After` when the request is refused. */
export const headersOf = (decision: RateLimiter.RateLimitDecision): Record<string, string> => ({
  "ratelimit-limit": String(decision.limit),
  "ratelimit-remaining": String(decision.remaining),
  "ratelimit-reset": String(decision.resetSeconds),
  ...(decision.allowed ? {} : { "retry-after": String(decision.resetSeconds) })
})
