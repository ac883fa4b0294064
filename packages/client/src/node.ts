/**
 * `@appexec/client/node`: webhook verification in a Node `http` server (or Express, Fastify's raw
 * request, anything that hands you an `IncomingMessage`). It reads the raw body (the signature
 * covers the bytes as sent, so the body must not be parsed first — mount this before any JSON
 * body parser) and verifies it with the client's cached key set. The only module of the client
 * that uses Node APIs; `@appexec/client` itself never loads it. Fetch-style servers use the
 * client's `verifyWebhookRequest(request)` instead.
 *
 * ```ts
 * import { verifyRequest } from "@appexec/client/node"
 *
 * http.createServer(async (req, res) => {
 *   const delivery = await verifyRequest(appexec, req).catch(() => undefined)
 *   res.writeHead(delivery ? 204 : 401).end()
 *   if (delivery) handle(delivery.execution)
 * })
 * ```
 */
import { concat } from "@appexec/core/Bytes"
import type * as WebhookVerifier from "@appexec/core/WebhookVerifier"
import { Effect } from "effect"
import type { AppexecClientService } from "./AppexecClient.js"
import { WebhookPayloadError } from "./ClientError.js"
import type { Client } from "./PromiseClient.js"
import { runPromise } from "./PromiseClient.js"
import type * as WebhookKeys from "./WebhookKeys.js"
import { DEFAULT_MAX_BODY_BYTES, type ReadOptions } from "./WebhookRequest.js"

export { DEFAULT_MAX_BODY_BYTES, type ReadOptions } from "./WebhookRequest.js"

/**
 * The few members of Node's `http.IncomingMessage` this module uses, declared here so that the
 * client compiles (and its types load) without Node's types; an `IncomingMessage` is one.
 */
export interface IncomingMessage {
  readonly headers: WebhookVerifier.HeadersLike
  readonly readableEnded: boolean
  on(event: "data", listener: (chunk: Uint8Array | string) => void): this
  on(event: "end", listener: () => void): this
  on(event: "error", listener: (error: Error) => void): this
  off(event: "data", listener: (chunk: Uint8Array | string) => void): this
  off(event: "end", listener: () => void): this
  off(event: "error", listener: (error: Error) => void): this
  resume(): this
}

const utf8 = new TextEncoder()

/** Reads the whole body of `request` as bytes, failing when it is larger than `maxBytes` (default 1 MiB). */
export const readRawBody = (
  request: IncomingMessage,
  options: ReadOptions = {}
): Effect.Effect<Uint8Array, WebhookPayloadError> =>
  Effect.async<Uint8Array, WebhookPayloadError>((resume) => {
    const maxBytes = options.maxBytes ?? DEFAULT_MAX_BODY_BYTES
    const chunks: Array<Uint8Array> = []
    let size = 0
    let done = false
    const finish = (effect: Effect.Effect<Uint8Array, WebhookPayloadError>) => {
      if (done) return
      done = true
      request.off("data", onData).off("end", onEnd).off("error", onError)
      resume(effect)
    }
    const onData = (chunk: Uint8Array | string) => {
      const buffer = typeof chunk === "string" ? utf8.encode(chunk) : chunk
      size += buffer.byteLength
      if (size > maxBytes) {
        request.resume()
        return finish(
          Effect.fail(new WebhookPayloadError({ message: `The webhook body is larger than ${maxBytes} bytes.` }))
        )
      }
      chunks.push(buffer)
    }
    const onEnd = () => finish(Effect.succeed(concat(chunks, size)))
    const onError = (error: Error) =>
      finish(Effect.fail(new WebhookPayloadError({ message: `The webhook body could not be read: ${error.message}` })))
    if (request.readableEnded) {
      return finish(
        Effect.fail(
          new WebhookPayloadError({ message: "The webhook body was already read (a body parser ran first)." })
        )
      )
    }
    request.on("data", onData).on("end", onEnd).on("error", onError)
    return Effect.sync(() => {
      done = true
      request.off("data", onData).off("end", onEnd).off("error", onError)
    })
  })

/**
 * Reads and verifies the webhook `request` with the Effect client's cached key set: the service's
 * signature, or Standard Webhooks' with `scheme: "standard"`.
 */
export const verify = (
  client: AppexecClientService,
  request: IncomingMessage,
  options?: ReadOptions & WebhookKeys.VerifyOptions
) => Effect.flatMap(readRawBody(request, options), (body) => client.webhooks.verify(body, request.headers, options))

/** Reads and verifies the webhook `request` with the Promise client's cached key set; rejects with `WebhookVerificationError`. */
export const verifyRequest = (
  client: Client,
  request: IncomingMessage,
  options?: ReadOptions & WebhookKeys.VerifyOptions
) => runPromise(verify(client.effect, request, options))
