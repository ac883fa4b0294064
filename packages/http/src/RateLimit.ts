/**
 * The rate limit of every `/v1` request: a sliding window per client IP over core's
 * `RateLimiter`, counted before authentication. The client IP is the socket address, or, behind
 * `trustProxy` proxies you trust, the address the farthest of them saw (see `clientIp`).
 */
import type { RateLimiter } from "@appexec/core"
import type { ServerRequest } from "./internal/Exchange.js"

/** Settings of the limit. */
export interface RateLimitOptions {
  /** Requests per window and client (default 100). */
  readonly limit?: number
  /** Window length in milliseconds (default one minute). */
  readonly windowMs?: number
  /**
   * How many proxies in front of the server append to `X-Forwarded-For` and are trusted
   * (default 0: the socket address counts). `true` is one.
   */
  readonly trustProxy?: boolean | number
}

/** The defaults: 100 requests per minute per IP, no trusted proxy. */
export const defaults = { limit: 100, windowMs: 60_000, trustProxy: 0 } as const

/** The policy `options` describe. */
export const policyOf = (options: RateLimitOptions = {}): RateLimiter.RateLimitPolicy => ({
  limit: options.limit ?? defaults.limit,
  windowMs: options.windowMs ?? defaults.windowMs
})

/** The number of trusted proxy hops `trustProxy` stands for. */
export const hopsOf = (trustProxy: boolean | number | undefined): number =>
  trustProxy === true ? 1 : typeof trustProxy === "number" && trustProxy > 0 ? Math.floor(trustProxy) : 0

/**
 * The address a request is counted under. With no trusted proxy, the socket's peer. Behind
 * `hops` trusted proxies, each of which appends the address it received the request from to
 * `X-Forwarded-For`, the last `hops` entries were written by them, and the first of those is the
 * address the farthest trusted proxy saw: the client. Entries to its left were written by the
 * client and could be anything, so they never count. A request with fewer entries than `hops`
 * passed fewer proxies; its leftmost entry, written by a trusted proxy, counts.
 */
export const clientIp = (request: Pick<ServerRequest, "headers" | "remoteAddress">, hops: number): string => {
  if (hops > 0) {
    const header = request.headers["x-forwarded-for"]
    if (header !== undefined) {
      const entries = header.split(",")
      const entry = entries[Math.max(0, entries.length - hops)]!.trim()
      if (entry !== "") return entry
    }
  }
  return request.remoteAddress ?? "unknown"
}

/** The `RateLimit-*` headers of a decision, and `Retry-After` when the request is refused. */
export const headersOf = (decision: RateLimiter.RateLimitDecision): Record<string, string> => {
  const headers: Record<string, string> = {
    "ratelimit-limit": String(decision.limit),
    "ratelimit-remaining": String(decision.remaining),
    "ratelimit-reset": String(decision.resetSeconds)
  }
  if (!decision.allowed) headers["retry-after"] = String(decision.resetSeconds)
  return headers
}
