/**
 * Reads a JSON request body within a size bound, turning every way it can be wrong into a
 * 400 or 413 in the error body (never a defect).
 */
import type { HttpServerRequest } from "@effect/platform"
import { Chunk, Effect, Stream } from "effect"
import { type BadRequest, invalidRequest, PayloadTooLarge } from "@appexec/api/ApiError"

/** How far past the bound a body is still drained before the connection is dropped. */
const DRAIN_FACTOR = 16

const tooLarge = (maxBytes: number) =>
  new PayloadTooLarge({
    error: { code: "payload_too_large", message: `The request body is larger than ${maxBytes} bytes.` }
  })

const isJsonMediaType = (contentType: string | undefined) => {
  if (contentType === undefined) return false
  const essence = contentType.split(";")[0]!.trim().toLowerCase()
  return essence === "application/json" || (essence.startsWith("application/") && essence.endsWith("+json"))
}

/** The parsed JSON body of `request`, at most `maxBytes` long. */
export const readJsonBody = (
  request: HttpServerRequest.HttpServerRequest,
  maxBytes: number
): Effect.Effect<unknown, BadRequest | PayloadTooLarge> =>
  Effect.gen(function* () {
    if (!isJsonMediaType(request.headers["content-type"])) {
      return yield* Effect.fail(invalidRequest("The request body must be JSON, sent with 'Content-Type: application/json'."))
    }
    const declared = Number(request.headers["content-length"])
    if (Number.isFinite(declared) && declared > maxBytes) return yield* Effect.fail(tooLarge(maxBytes))
    // Past the bound the rest is read and dropped (up to a point), so that the client can still
    // read the 413: stopping mid-body would reset the connection before the answer is sent.
    const { chunks, size } = yield* request.stream.pipe(
      Stream.mapError(() => invalidRequest("The request body could not be read.")),
      Stream.runFoldEffect({ chunks: Chunk.empty<Uint8Array>(), size: 0 }, (acc, chunk) => {
        const size = acc.size + chunk.length
        if (size > maxBytes * DRAIN_FACTOR) return Effect.fail(tooLarge(maxBytes))
        return Effect.succeed({ chunks: size > maxBytes ? acc.chunks : Chunk.append(acc.chunks, chunk), size })
      })
    )
    if (size > maxBytes) return yield* Effect.fail(tooLarge(maxBytes))
    const bytes = new Uint8Array(size)
    Chunk.reduce(chunks, 0, (offset, c) => {
      bytes.set(c, offset)
      return offset + c.length
    })
    const text = yield* Effect.try({
      try: () => new TextDecoder("utf-8", { fatal: true }).decode(bytes),
      catch: () => invalidRequest("The request body is not valid UTF-8.")
    })
    if (text.trim() === "") return yield* Effect.fail(invalidRequest("The request body is empty; send { \"inputs\": { … } }."))
    return yield* Effect.try({
      try: (): unknown => JSON.parse(text),
      catch: (error) => invalidRequest(`The request body is not valid JSON: ${error instanceof Error ? error.message : String(error)}.`)
    })
  })
