/**
 * Reads the body of an upload (`POST /v1/uploads`) within its bound: a `Content-Length` over the
 * bound is refused before a byte is read, a body that passes it while it is read is refused
 * there (the adapter drops the rest), both with 413 `payload_too_large` in the error body.
 */
import { Effect } from "effect"
import * as ErrorAnswers from "./ErrorAnswers.js"
import type { ServerRequest } from "./Exchange.js"
import { Refused } from "./JsonBody.js"

/** The 413 of an upload larger than `maxBytes`, naming the bound in MiB when it is whole MiB. */
const tooLarge = (maxBytes: number) =>
  new Refused({
    response: ErrorAnswers.fromInfo(
      {
        code: "payload_too_large",
        message: `The upload is larger than ${
          maxBytes % (1024 * 1024) === 0 ? `${maxBytes / 1024 / 1024} MiB` : `${maxBytes} bytes`
        }, the most this instance accepts.`
      },
      { connection: "close" }
    )
  })

/** The bytes of the upload `request` carries, at most `maxBytes`. */
export const read = (request: ServerRequest, maxBytes: number): Effect.Effect<Uint8Array, Refused> => {
  const declared = Number(request.headers["content-length"])
  if (Number.isFinite(declared) && declared > maxBytes) return Effect.fail(tooLarge(maxBytes))
  return request.body(maxBytes).pipe(
    Effect.mapError((failure) =>
      failure._tag === "TooLarge"
        ? tooLarge(maxBytes)
        : new Refused({ response: ErrorAnswers.invalidRequest("The upload could not be read to its end.") })
    )
  )
}
