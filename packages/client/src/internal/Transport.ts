/**
 * The HTTP client every request of `@appexec/client` goes through: the configured `fetch`, the
 * API key header, a timeout per attempt, and the retries of `RetryPolicy` (waiting on `Clock`,
 * so virtual time drives them in tests). A network failure becomes a `NetworkError` that says
 * whether the request may have reached the server.
 */
import * as FetchHttpClient from "@effect/platform/FetchHttpClient"
import * as HttpClient from "@effect/platform/HttpClient"
import type * as HttpClientError from "@effect/platform/HttpClientError"
import * as HttpClientRequest from "@effect/platform/HttpClientRequest"
import type * as HttpClientResponse from "@effect/platform/HttpClientResponse"
import { Clock, Duration, Effect, Random } from "effect"
import { type ClientConfig, DEFAULT_TIMEOUT_MS } from "../ClientConfig.js"
import { NetworkError } from "../ClientError.js"
import * as RetryPolicy from "../RetryPolicy.js"

/** Error codes of a connection that was never made, so nothing was sent. */
const NEVER_SENT_CODES: ReadonlySet<string> = new Set(["ECONNREFUSED", "ENOTFOUND", "EAI_AGAIN", "EADDRNOTAVAIL"])

const codeOf = (u: unknown): string | undefined =>
  typeof u === "object" && u !== null && "code" in u && typeof u.code === "string" ? u.code : undefined

/**
 * True when a fetch failure provably happened before any byte was sent: somewhere in its cause
 * chain is a refused connection or an unresolvable host (every one of them, for an
 * `AggregateError` of several addresses).
 */
export const neverSent = (cause: unknown, depth = 0): boolean => {
  if (depth > 5 || typeof cause !== "object" || cause === null) return false
  const code = codeOf(cause)
  if (code !== undefined && NEVER_SENT_CODES.has(code)) return true
  if ("errors" in cause && Array.isArray(cause.errors) && cause.errors.length > 0) {
    return cause.errors.every((e: unknown) => neverSent(e, depth + 1))
  }
  return "cause" in cause ? neverSent(cause.cause, depth + 1) : false
}

const describe = (cause: unknown): string => {
  const code = codeOf(cause) ??
    (typeof cause === "object" && cause !== null && "cause" in cause ? codeOf(cause.cause) : undefined)
  const text = cause instanceof Error ? cause.message : String(cause)
  return code === undefined ? text : `${text} (${code})`
}

const networkErrorOf = (error: HttpClientError.RequestError): NetworkError => {
  const unreachable = error.reason === "Transport" && neverSent(error.cause)
  const sent = error.reason === "Transport" && !unreachable
  return new NetworkError({
    reason: unreachable ? "unreachable" : "network",
    method: error.request.method,
    url: error.request.url,
    sent,
    message: `${error.request.method} ${error.request.url} failed: ${describe(error.cause)}`
  })
}

const header = (response: HttpClientResponse.HttpClientResponse) => (name: string) => response.headers[name]

/** The transport over `FetchHttpClient`, configured by `config`. */
export const make = (
  config: ClientConfig
): Effect.Effect<HttpClient.HttpClient.With<HttpClientError.HttpClientError | NetworkError>> =>
  Effect.gen(function*() {
    const base = yield* HttpClient.HttpClient
    const fetch = config.fetch ?? globalThis.fetch
    const timeout = Duration.millis(config.timeoutMs ?? DEFAULT_TIMEOUT_MS)
    const retry = config.retry ?? {}

    return base.pipe(
      HttpClient.mapRequest(HttpClientRequest.setHeader("x-api-key", config.apiKey)),
      // JSON unless the request asks for something else (the event stream asks for text/event-stream).
      HttpClient.mapRequest((request) =>
        request.headers["accept"] === undefined ? HttpClientRequest.acceptJson(request) : request
      ),
      HttpClient.transform((send, request) => {
        // A cancel may be sent again like a read: a second cancel changes nothing the first did not.
        const kind: RetryPolicy.RequestKind = request.method === "GET" || request.url.endsWith("/cancel")
          ? "read"
          : "start"
        // A long poll (`Prefer: wait=N`) is held up to N seconds before the server answers.
        const held = /\bwait=(\d{1,2})\b/.exec(request.headers["prefer"] ?? "")
        const limit = held === null ? timeout : Duration.sum(timeout, Duration.seconds(Number(held[1])))
        const attempt = send.pipe(
          Effect.provideService(FetchHttpClient.Fetch, fetch),
          Effect.timeoutFail({
            duration: limit,
            onTimeout: () =>
              new NetworkError({
                reason: "timeout",
                method: request.method,
                url: request.url,
                sent: true,
                message: `${request.method} ${request.url} got no answer within ${Duration.format(limit)}.`
              })
          }),
          Effect.catchIf(
            (e): e is HttpClientError.RequestError => e._tag === "RequestError",
            (e) => Effect.fail(networkErrorOf(e))
          )
        )

        const decide = (retries: number, outcome: RetryPolicy.Outcome) =>
          Effect.gen(function*() {
            return RetryPolicy.decide(retry, kind, retries, outcome, yield* Clock.currentTimeMillis, yield* Random.next)
          })

        /** Tells `onRetry`, then waits: the hook runs right before the wait begins. */
        const pause = (retries: number, decision: RetryPolicy.Retry) =>
          Effect.zipRight(
            Effect.sync(() =>
              config.onRetry?.({
                method: request.method,
                url: request.url,
                reason: decision.reason,
                retry: retries + 1,
                delayMs: decision.delayMs
              })
            ),
            Effect.sleep(Duration.millis(decision.delayMs))
          )

        const loop = (
          retries: number
        ): Effect.Effect<HttpClientResponse.HttpClientResponse, HttpClientError.HttpClientError | NetworkError> =>
          attempt.pipe(
            Effect.matchEffect({
              onFailure: (error) =>
                error._tag !== "NetworkError"
                  ? Effect.fail(error)
                  : Effect.flatMap(decide(retries, { _tag: "NoResponse", neverSent: !error.sent }), (decision) =>
                    decision === undefined
                      ? Effect.fail(error)
                      : Effect.zipRight(pause(retries, decision), loop(retries + 1))),
              onSuccess: (response) =>
                Effect.flatMap(
                  decide(retries, { _tag: "Response", status: response.status, header: header(response) }),
                  (decision) =>
                    decision === undefined
                      ? Effect.succeed(response)
                      // The refused answer is read to the end so that its connection can be reused.
                      : response.arrayBuffer.pipe(
                        Effect.ignore,
                        Effect.zipRight(pause(retries, decision)),
                        Effect.zipRight(loop(retries + 1))
                      )
                )
            })
          )
        return loop(0)
      })
    )
  }).pipe(Effect.provide(FetchHttpClient.layer))
