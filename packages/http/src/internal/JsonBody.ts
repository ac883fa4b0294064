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

/** The parsed JSON body of `request`, at most `maxBytes` long. */
export const read = (request: ServerRequest, maxBytes: number): Effect.Effect<unknown, Refused> =>
  Effect.gen(function*() {
    if (!isJsonMediaType(request.headers["content-type"])) {
      return yield* refuse(
        ErrorAnswers.invalidRequest("The request body must be JSON, sent with 'Content-Type: application/json'.")
      )
    }
    const declared = Number(request.headers["content-length"])
    if (Number.isFinite(declared) && declared > maxBytes) return yield* refuse(ErrorAnswers.payloadTooLarge(maxBytes))
    const bytes = yield* request.body(maxBytes).pipe(
      Effect.mapError((failure) =>
        refuse(
          failure._tag === "TooLarge"
            ? ErrorAnswers.payloadTooLarge(maxBytes)
            : ErrorAnswers.invalidRequest("The request body could not be read.")
        )
      )
    )
    const text = yield* Effect.try({
      try: () => decoder.decode(bytes),
      catch: () => refuse(ErrorAnswers.invalidRequest("The request body is not valid UTF-8."))
    })
    if (text.trim() === "") {
      return yield* refuse(ErrorAnswers.invalidRequest("The request body is empty; send { \"inputs\": { … } }."))
    }
    return yield* Effect.try({
      try: (): unknown => JSON.parse(text),
      catch: (error) =>
        refuse(
          ErrorAnswers.invalidRequest(
            `The request body is not valid JSON: ${error instanceof Error ? error.message : String(error)}.`
          )
        )
    })
  })
