/**
 * Turns whatever a typed endpoint call of `HttpApiClient` fails with into the client's errors:
 * the declared error responses of the API (by their status), an undeclared status (read as the
 * error body when it is one), a body that does not decode, and the transport's `NetworkError`.
 */
import * as HttpErrors from "@appexec/api/ApiError"
import * as ErrorBody from "@appexec/api/ErrorBody"
import * as HttpClientError from "@effect/platform/HttpClientError"
import { Effect, Option, ParseResult, Schema } from "effect"
import { ApiError, NetworkError, type RequestError } from "../ClientError.js"

/** The HTTP status of every declared error response of the API. */
const declared: ReadonlyArray<readonly [new(...args: never) => { readonly error: ErrorBody.ErrorInfo }, number]> = [
  [HttpErrors.BadRequest, 400],
  [HttpErrors.Unauthenticated, 401],
  [HttpErrors.Forbidden, 403],
  [HttpErrors.NotFound, 404],
  [HttpErrors.NotAcceptable, 406],
  [HttpErrors.Conflict, 409],
  [HttpErrors.PayloadTooLarge, 413],
  [HttpErrors.UnsupportedMediaType, 415],
  [HttpErrors.TooManyRequests, 429],
  [HttpErrors.InternalError, 500]
]

const decodeErrorBody = Schema.decodeUnknownOption(ErrorBody.ErrorBody)

const fromInfo = (status: number, info: ErrorBody.ErrorInfo) =>
  new ApiError({
    status,
    code: info.code,
    message: info.message,
    ...(info.details === undefined ? {} : { details: info.details })
  })

const fromUndeclared = (error: HttpClientError.ResponseError): Effect.Effect<never, ApiError> =>
  error.response.json.pipe(
    Effect.option,
    Effect.flatMap((json) => {
      const body = Option.flatMap(json, decodeErrorBody)
      const status = error.response.status
      return Effect.fail(
        Option.match(body, {
          onSome: (b) => fromInfo(status, b.error),
          onNone: () =>
            new ApiError({
              status,
              code: "unexpected_response",
              message: `${error.request.method} ${error.request.url} answered ${status} without an appexec error body.`
            })
        })
      )
    })
  )

/** The client error of a failed endpoint call. */
export const toRequestError = (error: unknown): Effect.Effect<never, RequestError> => {
  for (const [cls, status] of declared) {
    if (error instanceof cls) return Effect.fail(fromInfo(status, error.error))
  }
  if (error instanceof NetworkError || error instanceof ApiError) return Effect.fail(error)
  if (HttpClientError.isHttpClientError(error)) {
    if (error._tag === "ResponseError") return fromUndeclared(error)
    return Effect.fail(
      new NetworkError({
        reason: "network",
        method: error.request.method,
        url: error.request.url,
        sent: false,
        message: `${error.request.method} ${error.request.url} could not be sent: ${error.message}`
      })
    )
  }
  if (ParseResult.isParseError(error)) {
    return Effect.fail(
      // A request is encoded from typed arguments, so a schema mismatch is nearly always the answer's.
      new ApiError({
        status: 0,
        code: "unexpected_response",
        message: `A request or its answer did not match the appexec API: ${error.message}`
      })
    )
  }
  return Effect.die(error)
}

/** Every error call of the shared API definition, re-typed as the client's errors. */
export const mapErrors = <A, R>(effect: Effect.Effect<A, unknown, R>): Effect.Effect<A, RequestError, R> =>
  Effect.catchAll(effect, toRequestError)
