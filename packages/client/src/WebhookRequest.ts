/**
 * Webhook bodies as fetch-style servers receive them: a web `Request` (Hono, Next.js route
 * handlers, Deno, Bun, edge workers). The signature covers the body's bytes as sent (docs/api.md#signature),
 * so they are read raw, unparsed, and bounded in size. Only web-platform APIs are used.
 */
import { concat } from "@appexec/core/Bytes"
import { Chunk, Effect, Stream } from "effect"
import { WebhookPayloadError } from "./ClientError.js"

/** The largest webhook body read by default: 1 MiB. */
export const DEFAULT_MAX_BODY_BYTES = 1024 * 1024

/** Options of reading a webhook request. */
export interface ReadOptions {
  /** The largest body accepted, in bytes (default 1 MiB); a larger one fails with `WebhookPayloadError`. */
  readonly maxBytes?: number
}

const tooLarge = (maxBytes: number) =>
  new WebhookPayloadError({ message: `The webhook body is larger than ${maxBytes} bytes.` })

/**
 * Reads the whole body of `request` as bytes, failing with `WebhookPayloadError` when it is
 * larger than `maxBytes` (checked against `content-length` first, then while reading, so a large
 * body is never held whole) or was already read (a body parser ran first).
 */
export const readRawBody = (
  request: Request,
  options: ReadOptions = {}
): Effect.Effect<Uint8Array, WebhookPayloadError> =>
  Effect.suspend(() => {
    const maxBytes = options.maxBytes ?? DEFAULT_MAX_BODY_BYTES
    if (request.bodyUsed) {
      return Effect.fail(
        new WebhookPayloadError({ message: "The webhook body was already read (a body parser ran first)." })
      )
    }
    const declared = Number(request.headers.get("content-length") ?? Number.NaN)
    if (declared > maxBytes) return Effect.fail(tooLarge(maxBytes))
    const body = request.body
    if (body === null) return Effect.succeed(new Uint8Array(0))
    return Stream.fromReadableStream({
      evaluate: () => body,
      onError: (cause) =>
        new WebhookPayloadError({
          message: `The webhook body could not be read: ${cause instanceof Error ? cause.message : String(cause)}`
        })
    }).pipe(
      Stream.runFoldEffect({ chunks: Chunk.empty<Uint8Array>(), size: 0 }, (read, chunk) =>
        read.size + chunk.length > maxBytes
          ? Effect.fail(tooLarge(maxBytes))
          : Effect.succeed({ chunks: Chunk.append(read.chunks, chunk), size: read.size + chunk.length })),
      Effect.map((read) =>
        concat(read.chunks, read.size)
      )
    )
  })
