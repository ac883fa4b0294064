/**
 * An `OutboundHttp` for tests, on the runtime's own `fetch`: real requests (to the fake receivers
 * and origins a test starts on 127.0.0.1), redirects returned and not followed, the time and size
 * bounds of the port. It applies **no** address policy, so it reaches loopback: production
 * instances on Node use `NodeOutboundHttp` of `@appexec/platform-node`, which refuses private
 * networks unless told otherwise.
 */
import { OutboundHttp } from "@appexec/core"
import { Effect, Layer } from "effect"

const DEFAULT_TIMEOUT_MS = 10_000
const DEFAULT_MAX_RESPONSE_BYTES = 1024 * 1024

const failure = (reason: OutboundHttp.OutboundFailure, detail: string) =>
  new OutboundHttp.OutboundError({ reason, message: `outbound request failed: ${reason}`, detail })

/** The client. */
export const make: OutboundHttp.OutboundHttp["Type"] = {
  request: (request) =>
    Effect.gen(function*() {
      if (!URL.canParse(request.url) || !/^https?:$/.test(new URL(request.url).protocol)) {
        return yield* failure("invalid_url", `not an http(s) URL: ${request.url}`)
      }
      const maxBytes = request.maxResponseBytes ?? DEFAULT_MAX_RESPONSE_BYTES
      const response = yield* Effect.tryPromise({
        try: (signal) =>
          fetch(request.url, {
            method: request.method,
            redirect: "manual",
            signal,
            ...(request.headers === undefined ? {} : { headers: OutboundHttp.wireHeaders(request.headers) }),
            ...(request.body === undefined
              ? {}
              : { body: typeof request.body === "string" ? request.body : new Uint8Array(request.body) })
          }),
        catch: (cause) => failure("network", String(cause))
      })
      const body = new Uint8Array(
        yield* Effect.tryPromise({
          try: () => response.arrayBuffer(),
          catch: (cause) => failure("network", String(cause))
        })
      )
      if (body.length > maxBytes) return yield* failure("too_large", `${body.length} bytes`)
      const headers: Record<string, string> = {}
      response.headers.forEach((value, name) => {
        headers[name] = value
      })
      return { status: response.status, headers, body }
    }).pipe(
      Effect.timeoutFail({
        duration: request.timeoutMs ?? DEFAULT_TIMEOUT_MS,
        onTimeout: () => failure("timeout", `no answer within ${request.timeoutMs ?? DEFAULT_TIMEOUT_MS} ms`)
      })
    )
}

/** The client as a layer. */
export const layer: Layer.Layer<OutboundHttp.OutboundHttp> = Layer.succeed(OutboundHttp.OutboundHttp, make)
