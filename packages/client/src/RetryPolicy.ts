/**
 * When the client sends a request again (docs/api.md#errors), as a pure decision over what the last attempt
 * got: a 429 waits for `Retry-After` (else `RateLimit-Reset`); a 500 (or a 502/503/504 from a
 * proxy) and a network failure of a read are retried with bounded exponential backoff; 400, 401,
 * 403 and 404 are never retried; a start is retried only after a 429 (refused before it was
 * handled) or when it provably never reached the server.
 */

/** Bounds of the retries. */
export interface RetryOptions {
  /** Retries after the first attempt (default 4); 0 turns retrying off. */
  readonly maxRetries?: number
  /** First backoff wait, in milliseconds, doubled on every retry (default 500). */
  readonly baseDelayMs?: number
  /** Longest backoff wait, in milliseconds (default 8 000). */
  readonly maxDelayMs?: number
  /** Longest rate-limit wait the client accepts; a longer `Retry-After` fails at once (default 120 000). */
  readonly maxRateLimitWaitMs?: number
}

/** The defaults of `RetryOptions`. */
export const defaults: Required<RetryOptions> = {
  maxRetries: 4,
  baseDelayMs: 500,
  maxDelayMs: 8_000,
  maxRateLimitWaitMs: 120_000
}

/** What kind of request is decided on: a read (any GET) or the start of an execution. */
export type RequestKind = "read" | "start"

/** What the last attempt got. */
export type Outcome =
  | {
    readonly _tag: "Response"
    readonly status: number
    /** Header lookup by lower-case name. */
    readonly header: (name: string) => string | undefined
  }
  | {
    readonly _tag: "NoResponse"
    /** True only when the request provably never left this process (connection refused, unknown host). */
    readonly neverSent: boolean
  }

/** Why a request is sent again; what `onRetry` hooks are told. */
export type RetryReason = "rate_limited" | "server_error" | "network"

/** The decision: give up (`undefined`) or wait `delayMs` and send again. */
export interface Retry {
  readonly reason: RetryReason
  readonly delayMs: number
}

const TRANSIENT_STATUSES: ReadonlySet<number> = new Set([500, 502, 503, 504])

/** Milliseconds a `Retry-After` value (delta seconds or an HTTP date) asks to wait, at `nowMs`. */
export const parseRetryAfter = (value: string | undefined, nowMs: number): number | undefined => {
  if (value === undefined) return undefined
  const trimmed = value.trim()
  if (/^\d+(\.\d+)?$/.test(trimmed)) return Math.ceil(Number(trimmed) * 1000)
  const at = Date.parse(trimmed)
  return Number.isNaN(at) ? undefined : Math.max(0, at - nowMs)
}

/** Milliseconds a `RateLimit-Reset` value (delta seconds until the window resets) asks to wait. */
export const parseRateLimitReset = (value: string | undefined): number | undefined =>
  value !== undefined && /^\d+$/.test(value.trim()) ? Number(value.trim()) * 1000 : undefined

/** The backoff wait before retry number `retry` (0-based), jittered by `random` in [0, 1). */
export const backoff = (options: RetryOptions, retry: number, random: number): number => {
  const base = options.baseDelayMs ?? defaults.baseDelayMs
  const max = options.maxDelayMs ?? defaults.maxDelayMs
  const ceiling = Math.min(max, base * 2 ** retry)
  return Math.round(ceiling / 2 + (ceiling / 2) * random)
}

/**
 * Whether to send a request of `kind` again after `retriesSoFar` retries ended in `outcome`.
 * `nowMs` dates a `Retry-After` given as an HTTP date; `random` in [0, 1) jitters the backoff.
 */
export const decide = (
  options: RetryOptions,
  kind: RequestKind,
  retriesSoFar: number,
  outcome: Outcome,
  nowMs: number,
  random: number
): Retry | undefined => {
  if (retriesSoFar >= (options.maxRetries ?? defaults.maxRetries)) return undefined
  if (outcome._tag === "NoResponse") {
    // A start that may have arrived is never sent again: it could queue a second execution.
    return kind === "read" || outcome.neverSent
      ? { reason: "network", delayMs: backoff(options, retriesSoFar, random) }
      : undefined
  }
  if (outcome.status === 429) {
    const wait = parseRetryAfter(outcome.header("retry-after"), nowMs) ??
      parseRateLimitReset(outcome.header("ratelimit-reset")) ??
      backoff(options, retriesSoFar, random)
    return wait > (options.maxRateLimitWaitMs ?? defaults.maxRateLimitWaitMs)
      ? undefined
      : { reason: "rate_limited", delayMs: wait }
  }
  if (kind === "read" && TRANSIENT_STATUSES.has(outcome.status)) {
    return { reason: "server_error", delayMs: backoff(options, retriesSoFar, random) }
  }
  return undefined
}
