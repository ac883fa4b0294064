/**
 * Port: outbound HTTP for webhooks, media fetching and provider calls (docs/api.md). The production
 * implementation refuses private networks unless allowed, bounds time and size, and never
 * follows redirects: a 3xx answer is returned as it is.
 */
import { Context, type Effect, type Option, Redacted, Schema } from "effect"

/** A request to send. */
export interface OutboundRequest {
  readonly method: "GET" | "POST" | "PUT" | "PATCH" | "DELETE"
  readonly url: string
  /** Header values; a secret one stays `Redacted` until the request is written (`wireHeaders`). */
  readonly headers?: Readonly<Record<string, string | Redacted.Redacted<string>>>
  readonly body?: Uint8Array | string
  /** Whole-exchange time limit; the implementation's default when absent. */
  readonly timeoutMs?: number
  /** Largest response body accepted; the implementation's default when absent. */
  readonly maxResponseBytes?: number
}

/**
 * The headers of a request as they are written to the wire, secret values revealed: for an
 * adapter, at the moment it writes the request, and nowhere else.
 */
export const wireHeaders = (headers: OutboundRequest["headers"]): Record<string, string> => {
  const out: Record<string, string> = {}
  for (const [name, value] of Object.entries(headers ?? {})) {
    out[name] = Redacted.isRedacted(value) ? Redacted.value(value) : value
  }
  return out
}

/** The answer, whatever its status. Header names are lower-case. */
export interface OutboundResponse {
  readonly status: number
  readonly headers: Readonly<Record<string, string>>
  readonly body: Uint8Array
}

/** Why no answer was obtained. */
export const OutboundFailure = Schema.Literal(
  "invalid_url",
  "address_not_allowed",
  "dns",
  "timeout",
  "too_large",
  "network"
)
export type OutboundFailure = typeof OutboundFailure.Type

/**
 * A request that got no usable answer. `message` names only the category ("address not
 * allowed", "the host could not be resolved") and is fit to show a consumer; `detail` says what
 * happened (addresses a name resolved to, resolver and socket error codes) and is for the
 * operator's log and operator-only records, never for a consumer.
 */
export class OutboundError extends Schema.TaggedError<OutboundError>()("OutboundError", {
  reason: OutboundFailure,
  message: Schema.String,
  detail: Schema.String,
  /**
   * True when the request surely reached no server: the connection could not be made (refused,
   * host or network unreachable), so no byte of it was sent. A request that must not be repeated
   * once it may have arrived (a provider's submit) may still be sent again then.
   */
  unsent: Schema.optional(Schema.Boolean)
}) {}

/** A checked address to connect to. */
export interface ConnectTarget {
  readonly address: string
  readonly family: 4 | 6
}

/** Guarded outbound HTTP. */
export class OutboundHttp extends Context.Tag("@appexec/core/OutboundHttp")<
  OutboundHttp,
  {
    /** Sends one request; any HTTP status is a success of this call, redirects included. */
    readonly request: (request: OutboundRequest) => Effect.Effect<OutboundResponse, OutboundError>
    /**
     * Why a request to `url` would surely be refused, judged without the network (its host is a
     * literal address the client may not reach), or none when it may be sent. A client without
     * it is judged when it sends. The error's `message` is fit for the consumer who gave the URL.
     */
    readonly refusal?: (url: string) => Option.Option<OutboundError>
    /**
     * The address a connection to `url`'s host may go to, checked as a request's is (every
     * address the host resolves to, unless the host is allowed): for a client that opens a
     * connection of its own (a websocket, `ws:` or `wss:` judged as `http:` or `https:`), which
     * then connects to that address only. A client without it is judged by `refusal` alone.
     */
    readonly connectTarget?: (url: string) => Effect.Effect<ConnectTarget, OutboundError>
  }
>() {}
