/**
 * Reads the body of an upload (`POST /v1/uploads`) within its bound, as `JsonBody.readBytes`
 * reads any body: 413 `payload_too_large` naming the bound in MiB when it is whole MiB.
 */
import type { Effect } from "effect"
import * as ErrorAnswers from "./ErrorAnswers.js"
import type { ServerRequest } from "./Exchange.js"
import { readBytes, type Refused } from "./JsonBody.js"

/** The bytes of the upload `request` carries, at most `maxBytes`. */
export const read = (request: ServerRequest, maxBytes: number): Effect.Effect<Uint8Array, Refused> =>
  readBytes(request, maxBytes, {
    tooLarge: ErrorAnswers.payloadTooLarge(
      maxBytes,
      `The upload is larger than ${
        maxBytes % (1024 * 1024) === 0 ? `${maxBytes / 1024 / 1024} MiB` : `${maxBytes} bytes`
      }, the most this instance accepts.`
    ),
    unreadable: "The upload could not be read to its end."
  })
