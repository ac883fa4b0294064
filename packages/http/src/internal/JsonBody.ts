/**
 * Reads a JSON request body within a size bound. Every way it can be wrong — not JSON, not
 * UTF-8, empty, too large, cut off — is an answer in the error body (400 or 413), never a defect.
 */
import { Data, Effect } from "effect"
import * as ErrorAnswers from "./ErrorAnswers.js"
import type { ServerRequest, ServerResponse } from "./Exchange.js"

/** A request refused before it reached core: the answer says why. */
export class Refused extends Data.TaggedError("Refused")<{ readonly response: ServerResponse }> {}

const refuse = (response: ServerResponse) => new Refused({ response })

const isJsonMediaType = (contentType: string | undefined) => {
  if (contentType === undefined) return false
  const essence = contentType.split(";")[0]!.trim().toLowerCase()
  return essence === "application/json" || (essence.startsWith("application/") && essence.endsWith("+json"))
}

const decoder = new TextDecoder("utf-8", { fatal: true })

/**
 * The bytes of `request`'s body, at most `maxBytes`: a `Content-Length` over the bound is refused
 * before a byte is read, a body that passes it while it is read is refused there (the adapter
 * drops the rest), both with `tooLarge`; a body cut off is a 400 saying `unreadable`.
 */
export const readBytes = (
  request: ServerRequest,
  maxBytes: number,
  answers: { readonly tooLarge: ServerResponse; readonly unreadable: string }
): Effect.Effect<Uint8Array, Refused> => {
  const declared = Number(request.headers["content-length"])
  if (Number.isFinite(declared) && declared > maxBytes) return Effect.fail(refuse(answers.tooLarge))
  return request.body(maxBytes).pipe(
    Effect.mapError((failure) =>
      refuse(
        failure._tag === "TooLarge"
          ? answers.tooLarge
          : ErrorAnswers.invalidRequest(failure.reason ?? answers.unreadable)
      )
    )
  )
}

const notJson = refuse(
  ErrorAnswers.invalidRequest("The request body must be JSON, sent with 'Content-Type: application/json'.")
)
const notUtf8 = refuse(ErrorAnswers.invalidRequest("The request body is not valid UTF-8."))
const empty = refuse(ErrorAnswers.invalidRequest("The request body is empty; send { \"inputs\": { … } }."))

/**
 * A reader of JSON bodies at most `maxBytes` long: the parsed body of a request. Made once per
 * bound, so that its answers are too (every start reads its body through it): plain steps, no
 * generator.
 */
export const reader = (maxBytes: number): (request: ServerRequest) => Effect.Effect<unknown, Refused> => {
  const answers = {
    tooLarge: ErrorAnswers.payloadTooLarge(maxBytes),
    unreadable: "The request body could not be read."
  }
  const parse = (bytes: Uint8Array): Effect.Effect<unknown, Refused> => {
    let text: string
    try {
      text = decoder.decode(bytes)
    } catch {
      return Effect.fail(notUtf8)
    }
    if (text.trim() === "") return Effect.fail(empty)
    try {
      return Effect.succeed(JSON.parse(text) as unknown)
    } catch (error) {
      return Effect.fail(
        refuse(
          ErrorAnswers.invalidRequest(
            `The request body is not valid JSON: ${error instanceof Error ? error.message : String(error)}.`
          )
        )
      )
    }
  }
  return (request) =>
    isJsonMediaType(request.headers["content-type"])
      ? Effect.flatMap(readBytes(request, maxBytes, answers), parse)
      : Effect.fail(notJson)
}
