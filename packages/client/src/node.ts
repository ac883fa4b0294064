/**
 * Webhook verification in a Node `http` server: reads the raw body of an `IncomingMessage` (the
 * signature covers the bytes as sent, so the body must not be parsed first — mount this before
 * any JSON body parser) and verifies it with the client's cached key set.
 *
 * ```ts
 * http.createServer(async (req, res) => {
 *   const delivery = await NodeWebhook.verifyRequest(appexec, req).catch(() => undefined)
 *   res.writeHead(delivery ? 204 : 401).end()
 *   if (delivery) handle(delivery.execution)
 * })
 * ```
 */
import type { IncomingMessage } from "node:http"
import { Effect } from "effect"
import type { AppexecClientService } from "./AppexecClient.js"
import { WebhookPayloadError } from "./ClientError.js"
import type { Client } from "./PromiseClient.js"
import { runPromise } from "./PromiseClient.js"

/** The largest webhook body read by default: 1 MiB. */
export const DEFAULT_MAX_BODY_BYTES = 1024 * 1024

/** Reads the whole body of `request` as bytes, failing when it is larger than `maxBytes`. */
export const readRawBody = (
  request: IncomingMessage,
  maxBytes: number = DEFAULT_MAX_BODY_BYTES
): Effect.Effect<Uint8Array, WebhookPayloadError> =>
  Effect.async<Uint8Array, WebhookPayloadError>((resume) => {
    const chunks: Array<Buffer> = []
    let size = 0
    let done = false
    const finish = (effect: Effect.Effect<Uint8Array, WebhookPayloadError>) => {
      if (done) return
      done = true
      request.off("data", onData).off("end", onEnd).off("error", onError)
      resume(effect)
    }
    const onData = (chunk: Buffer | string) => {
      const buffer = typeof chunk === "string" ? Buffer.from(chunk) : chunk
      size += buffer.length
      if (size > maxBytes) {
        request.resume()
        return finish(Effect.fail(new WebhookPayloadError({ message: `The webhook body is larger than ${maxBytes} bytes.` })))
      }
      chunks.push(buffer)
    }
    const onEnd = () => finish(Effect.succeed(new Uint8Array(Buffer.concat(chunks))))
    const onError = (error: Error) =>
      finish(Effect.fail(new WebhookPayloadError({ message: `The webhook body could not be read: ${error.message}` })))
    if (request.readableEnded) {
      return finish(Effect.fail(new WebhookPayloadError({ message: "The webhook body was already read (a body parser ran first)." })))
    }
    request.on("data", onData).on("end", onEnd).on("error", onError)
    return Effect.sync(() => {
      done = true
      request.off("data", onData).off("end", onEnd).off("error", onError)
    })
  })

/** Reads and verifies the webhook `request` with the client's cached key set (Effect API). */
export const verify = (client: AppexecClientService, request: IncomingMessage, maxBytes?: number) =>
  Effect.flatMap(readRawBody(request, maxBytes), (body) => client.webhooks.verify(body, request.headers))

/** Reads and verifies the webhook `request` with the client's cached key set (Promise API). */
export const verifyRequest = (client: Client, request: IncomingMessage, maxBytes?: number) =>
  runPromise(verify(client.effect, request, maxBytes))
