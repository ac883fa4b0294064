/**
 * The error responses of the API, one class per HTTP status. Each encodes to exactly the error
 * body of docs/api.md (`{ "error": { "code", "message", "details"? } }`), built from core's
 * `ErrorInfo` with `code` narrowed to the codes that status carries.
 */
import * as HttpApiSchema from "@effect/platform/HttpApiSchema"
import { Schema } from "effect"
import * as ErrorBody from "./ErrorBody.js"

const info = <const Codes extends readonly [ErrorBody.ErrorCode, ...Array<ErrorBody.ErrorCode>]>(...codes: Codes) =>
  Schema.Struct({ ...ErrorBody.ErrorInfo.fields, code: Schema.Literal(...codes) })

/** 400: malformed request, invalid inputs or webhook URL. */
export class BadRequest extends Schema.Class<BadRequest>("BadRequest")(
  { error: info("invalid_request", "invalid_inputs", "invalid_webhook_url") },
  HttpApiSchema.annotations({ status: 400, description: "The request, its inputs or its webhook URL are invalid." })
) {}

/** 401: missing, malformed, unknown or revoked API key. The response carries `WWW-Authenticate: Bearer`. */
export class Unauthenticated extends Schema.Class<Unauthenticated>("Unauthenticated")(
  { error: info("unauthorized") },
  HttpApiSchema.annotations({ status: 401, description: "Missing or invalid API key." })
) {}

/** 403: the app is private to another workspace. */
export class Forbidden extends Schema.Class<Forbidden>("Forbidden")(
  { error: info("forbidden") },
  HttpApiSchema.annotations({ status: 403, description: "The caller's workspace has no access to the app." })
) {}

/** 404: the app or execution does not exist (or is not visible from the caller's workspace). */
export class NotFound extends Schema.Class<NotFound>("NotFound")(
  { error: info("not_found") },
  HttpApiSchema.annotations({ status: 404, description: "The app or execution does not exist." })
) {}

/**
 * 406: the request's `Accept` excludes the only media type the endpoint answers (the event
 * stream's `text/event-stream`).
 */
export class NotAcceptable extends Schema.Class<NotAcceptable>("NotAcceptable")(
  { error: info("invalid_request") },
  HttpApiSchema.annotations({
    status: 406,
    description: "The request's Accept header excludes the media type the endpoint answers."
  })
) {}

/**
 * 409: the request conflicts with what was done before: an `Idempotency-Key` reused for a
 * different request, a cancel of an execution that has already finished, or a redelivery of a
 * webhook that cannot be sent again now.
 */
export class Conflict extends Schema.Class<Conflict>("Conflict")(
  { error: info("idempotency_key_reused", "execution_finished", "webhook_not_redeliverable") },
  HttpApiSchema.annotations({
    status: 409,
    description:
      "The idempotency key was used for another request, the execution has already finished, or its webhook cannot be redelivered now."
  })
) {}

/** 413: the request body is larger than the limit (1 MiB by default). */
export class PayloadTooLarge extends Schema.Class<PayloadTooLarge>("PayloadTooLarge")(
  { error: info("payload_too_large") },
  HttpApiSchema.annotations({ status: 413, description: "The request body is too large." })
) {}

/**
 * 415: an upload whose bytes are not what its `Content-Type` declares, or whose type is not one an
 * upload may be (docs/api.md#uploads).
 */
export class UnsupportedMediaType extends Schema.Class<UnsupportedMediaType>("UnsupportedMediaType")(
  { error: info("unsupported_media_type") },
  HttpApiSchema.annotations({
    status: 415,
    description: "The upload's Content-Type is missing or not accepted, or its bytes are another type."
  })
) {}

/** 429: the client's rate limit is used up; `Retry-After` says when to try again. */
export class TooManyRequests extends Schema.Class<TooManyRequests>("TooManyRequests")(
  { error: info("rate_limited") },
  HttpApiSchema.annotations({ status: 429, description: "Rate limit exceeded; wait for Retry-After seconds." })
) {}

/** 500: an unexpected failure; `details` carries the request id under which the server logged it. */
export class InternalError extends Schema.Class<InternalError>("InternalError")(
  { error: info("internal_error") },
  HttpApiSchema.annotations({ status: 500, description: "Unexpected server-side failure." })
) {}

/** A 400 `invalid_request` with `message`. */
export const invalidRequest = (message: string) => new BadRequest({ error: { code: "invalid_request", message } })
