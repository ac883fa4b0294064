/**
 * One request to a model provider, as the provider nodes (`http.job`, `provider.*`) send it: over
 * the guarded outbound HTTP port, within a per-request time limit, with transient failures
 * retried. A 429 waits as its `Retry-After` says (seconds or an HTTP date); 502, 503, 504, a
 * connection that failed or broke off and a request that timed out wait with exponential backoff
 * and jitter; every other answer (2xx, other 4xx, other 5xx) is returned at once. Retries stop at
 * a count and at a total time, after which the last answer is returned (or the last failure is
 * the node's). Each retry is a line of the execution's log that names the method and host only:
 * a path, a query, a header or a body may carry a consumer's words or a secret, and secret header
 * values stay `Redacted` until the outbound client writes them. Time is read and waited through
 * `Clock`, so `TestClock` drives every wait.
 */
import { NodeType, OutboundHttp, Redactor } from "@appexec/core"
import { Clock, Duration, Effect, Option, Random, type Redacted, Schema } from "effect"
import { STATUS_CODES } from "node:http"
import { addressRefusal, formatBytes } from "../Media.js"

/** How transient failures are retried. */
export interface RetryPolicy {
  /** Retries after the first attempt (0: none). */
  readonly retries: number
  /** Time from the first attempt within which a retry may still begin. */
  readonly within: Duration.DurationInput
  /** Wait before the first retry of a failure without `Retry-After`; doubled for each further one. */
  readonly base: Duration.DurationInput
  /** Longest wait between two attempts of a failure without `Retry-After`. */
  readonly cap: Duration.DurationInput
}

/** The defaults: 4 retries within 2 minutes, waits from 1 s doubling up to 30 s (before jitter). */
export const defaultRetry: RetryPolicy = { retries: 4, within: "2 minutes", base: "1 second", cap: "30 seconds" }

/** The retry settings a node's config may carry (JSON: counts and milliseconds). */
export const RetryConfig = Schema.Struct({
  /** Retries after the first attempt, 0 to 10 (default 4). */
  count: Schema.optional(Schema.Number.pipe(Schema.int(), Schema.between(0, 10))),
  /** Milliseconds from the first attempt within which a retry may begin (default 120000). */
  withinMs: Schema.optional(Schema.Number.pipe(Schema.int(), Schema.between(1, 3_600_000)))
})
export type RetryConfig = typeof RetryConfig.Type

/** The policy of a node's retry config: the defaults, overridden by what it sets. */
export const retryPolicyOf = (config: RetryConfig | undefined): RetryPolicy => ({
  ...defaultRetry,
  ...(config?.count === undefined ? {} : { retries: config.count }),
  ...(config?.withinMs === undefined ? {} : { within: Duration.millis(config.withinMs) })
})

/** A request to a provider. */
export interface ProviderRequest {
  readonly method: OutboundHttp.OutboundRequest["method"]
  readonly url: string
  /** Header values; secret ones stay redacted until the request is sent. Names are lower-cased. */
  readonly headers?: Readonly<Record<string, string | Redacted.Redacted<string>>>
  /** A JSON body (sent with `content-type: application/json` unless a header sets another). */
  readonly json?: unknown
  /** Time limit of each attempt. */
  readonly timeout: Duration.DurationInput
  /** Largest answer accepted, in bytes. */
  readonly maxResponseBytes: number
}

/** What the sender needs besides the request: the node's log and the retry policy. */
export interface SendOptions {
  /** The node's `log` (`NodeContext.log`): the execution's log, which its consumer reads. */
  readonly log: NodeType.NodeContext<unknown>["log"]
  readonly retry?: RetryPolicy
  /**
   * Whether an answer whose status looks transient is the provider's final word all the same
   * (fal keeps a failed request's answer, 503 or 504 with `X-Fal-Error-Type`): returned, not retried.
   */
  readonly isFinal?: (response: OutboundHttp.OutboundResponse) => boolean
  /**
   * The request creates a job or a generation at the provider (a submit), and the provider
   * documents no idempotency key that would let a repeat find the first (Replicate, fal and
   * OpenAI do not): it is sent again only when it surely reached no provider (the connection
   * could not be made) or the provider turned it away (`RETRY_BEFORE_TAKEN`: 429, 503). After a
   * timeout, a broken connection or another answer it may have been taken, and a repeat would
   * start (and bill) a second one: the failure or the answer is final.
   */
  readonly creates?: boolean
}

const fail = (message: string) => new NodeType.NodeFailure({ message })

/** HTTP statuses that mean "try again later". */
export const TRANSIENT_STATUSES: ReadonlySet<number> = new Set([429, 502, 503, 504])

/**
 * The transient statuses with which a provider turns a request away before taking it (rate
 * limited, unavailable), so that a submit may be sent again; a gateway's 502 or 504 may come
 * after the provider took it.
 */
export const RETRY_BEFORE_TAKEN: ReadonlySet<number> = new Set([429, 503])

/** The origin of an http(s) URL; undefined when it is none. */
export const originOf = (url: string): string | undefined => {
  if (!URL.canParse(url)) return undefined
  const parsed = new URL(url)
  return parsed.protocol === "http:" || parsed.protocol === "https:" ? parsed.origin : undefined
}

/** The host of a URL, for the execution's log; "?" when it is no URL. */
export const hostOf = (url: string): string => (URL.canParse(url) ? new URL(url).host : "?")

/** `503 Service Unavailable`: a status with its reason phrase when Node knows one. */
export const statusText = (status: number): string => {
  const reason = STATUS_CODES[status]
  return reason === undefined ? String(status) : `${status} ${reason}`
}

/** A wait in words for the log: `2s`, `1.5s`, `350ms`, `2m 5s`. */
export const formatWait = (millis: number): string => {
  const ms = Math.max(0, Math.round(millis))
  if (ms < 1000) return `${ms}ms`
  if (ms < 60_000) return `${+(ms / 1000).toFixed(1)}s`
  const minutes = Math.floor(ms / 60_000)
  const seconds = Math.round((ms % 60_000) / 1000)
  return seconds === 0 ? `${minutes}m` : `${minutes}m ${seconds}s`
}

/**
 * The wait a `Retry-After` value asks for, in milliseconds from `now`: delay-seconds or an
 * HTTP date (RFC 9110 §10.2.3); none when the value is neither.
 */
export const retryAfterMillis = (value: string | undefined, now: number): Option.Option<number> => {
  if (value === undefined) return Option.none()
  const trimmed = value.trim()
  if (/^\d+$/.test(trimmed)) return Option.some(Number(trimmed) * 1000)
  const date = Date.parse(trimmed)
  return Number.isNaN(date) ? Option.none() : Option.some(Math.max(0, date - now))
}

/** The consumer's words for a request that got no answer: the category, never the network's detail. */
export const failureOf = (
  error: OutboundHttp.OutboundError,
  url: string,
  http: OutboundHttp.OutboundHttp["Type"],
  timeoutMs: number,
  maxResponseBytes: number
): string => {
  switch (error.reason) {
    case "address_not_allowed":
      return `the request was refused: ${addressRefusal(http, url)}`
    case "timeout":
      return `the endpoint did not answer within ${timeoutMs / 1000} s`
    case "too_large":
      return `the endpoint's answer is larger than ${formatBytes(maxResponseBytes)}`
    case "dns":
      return "the request failed: the endpoint's host could not be resolved"
    case "invalid_url":
      return "the request failed: the URL is not a valid http or https URL"
    case "network":
      return "the request failed: the connection failed"
  }
}

/** Why a submit that may have reached the provider is not sent again. */
const MAY_BE_TAKEN = "the provider may have taken it, and a repeat could start a second job"

/** The wait before retry number `n` (1-based) without `Retry-After`: half the backoff, plus up to half again at random. */
const backoff = (policy: RetryPolicy, n: number) =>
  Effect.map(Random.next, (r) => {
    const full = Math.min(Duration.toMillis(policy.cap), Duration.toMillis(policy.base) * 2 ** (n - 1))
    return Math.round(full / 2 + (full / 2) * r)
  })

/**
 * Sends `request`, retrying transient failures under `options.retry` (`defaultRetry`). Succeeds
 * with the provider's answer, whatever its status (after retries ran out, the last one); fails
 * with a `NodeFailure` in consumer-safe words when no answer came.
 */
export const send = (
  request: ProviderRequest,
  options: SendOptions
): Effect.Effect<OutboundHttp.OutboundResponse, NodeType.NodeFailure, OutboundHttp.OutboundHttp> =>
  Effect.gen(function*() {
    const http = yield* OutboundHttp.OutboundHttp
    const policy = options.retry ?? defaultRetry
    const within = Duration.toMillis(policy.within)
    const timeoutMs = Duration.toMillis(request.timeout)
    const what = `${request.method} ${hostOf(request.url)}`
    const body = request.json === undefined ? undefined : JSON.stringify(request.json)
    const outbound = (): OutboundHttp.OutboundRequest => {
      const headers: Record<string, string | Redacted.Redacted<string>> = {}
      for (const [name, value] of Object.entries(request.headers ?? {})) headers[name.toLowerCase()] = value
      if (body !== undefined) headers["content-type"] ??= "application/json"
      headers["accept"] ??= "application/json"
      return {
        method: request.method,
        url: request.url,
        headers,
        ...(body === undefined ? {} : { body }),
        timeoutMs,
        maxResponseBytes: request.maxResponseBytes
      }
    }
    const began = yield* Clock.currentTimeMillis
    let attempt = 0
    while (true) {
      const result = yield* Effect.either(http.request(outbound()))
      // What went wrong, in the log's words, and the wait the provider asked for, if any.
      let trouble: string
      let asked: Option.Option<number> = Option.none()
      if (result._tag === "Right") {
        const response = result.right
        if (!TRANSIENT_STATUSES.has(response.status) || options.isFinal?.(response) === true) return response
        trouble = `answered ${response.status}`
        if (options.creates === true && !RETRY_BEFORE_TAKEN.has(response.status)) {
          yield* options.log(`${what} ${trouble}; not retried: ${MAY_BE_TAKEN}`, "warn")
          return response
        }
        if (response.status === 429) {
          asked = retryAfterMillis(response.headers["retry-after"], yield* Clock.currentTimeMillis)
        }
        if (attempt >= policy.retries) {
          yield* options.log(`${what} answered ${response.status}; no retries left`, "warn")
          return response
        }
      } else {
        const error = result.left
        if (error.reason !== "timeout" && error.reason !== "network") {
          return yield* Effect.fail(fail(failureOf(error, request.url, http, timeoutMs, request.maxResponseBytes)))
        }
        trouble = error.reason === "timeout"
          ? `did not answer within ${formatWait(timeoutMs)}`
          : "failed: the connection failed"
        if (options.creates === true && error.unsent !== true) {
          yield* options.log(`${what} ${trouble}; not retried: ${MAY_BE_TAKEN}`, "warn")
          return yield* Effect.fail(fail(failureOf(error, request.url, http, timeoutMs, request.maxResponseBytes)))
        }
        if (attempt >= policy.retries) {
          yield* options.log(`${what} ${trouble}; no retries left`, "warn")
          return yield* Effect.fail(fail(failureOf(error, request.url, http, timeoutMs, request.maxResponseBytes)))
        }
      }
      attempt += 1
      const wait = Option.isSome(asked) ? asked.value : yield* backoff(policy, attempt)
      const elapsed = (yield* Clock.currentTimeMillis) - began
      if (elapsed + wait > within) {
        yield* options.log(
          `${what} ${trouble}; not retried: a retry in ${formatWait(wait)} would pass the ${
            formatWait(within)
          } allowed for retries`,
          "warn"
        )
        if (result._tag === "Right") return result.right
        return yield* Effect.fail(fail(failureOf(result.left, request.url, http, timeoutMs, request.maxResponseBytes)))
      }
      yield* options.log(`${what} ${trouble}; retry ${attempt} of ${policy.retries} in ${formatWait(wait)}`, "warn")
      yield* Effect.sleep(Duration.millis(wait))
    }
  })

/** The answer's body as JSON, or a `NodeFailure` saying it is not JSON. */
export const jsonOf = (response: OutboundHttp.OutboundResponse): Effect.Effect<unknown, NodeType.NodeFailure> =>
  Effect.try({
    try: (): unknown => JSON.parse(new TextDecoder().decode(response.body)),
    catch: () => fail("the endpoint's answer is not JSON")
  })

/**
 * The start of an error body, one line, for the operator's log only (never the consumer's):
 * masked by the redactor before it is cut, since a secret cut in two would no longer be found.
 */
export const snippet = (body: Uint8Array): Effect.Effect<string> =>
  Effect.map(Redactor.Redactor, (redactor) => {
    const decoded = new TextDecoder("utf-8", { fatal: false }).decode(body.subarray(0, 4096))
    const text = redactor.text(decoded).replace(/\s+/g, " ").trim()
    return text === "" ? "(empty body)" : text.length > 200 ? `${text.slice(0, 200)}…` : text
  })
