/**
 * The error body of every non-2xx response (docs/api.md):
 * `{ "error": { "code", "message", "details"? } }`.
 */
import { Schema } from "effect"

/** Machine-readable error codes (docs/api.md). */
export const ErrorCode = Schema.Literal(
  "invalid_request",
  "invalid_inputs",
  "invalid_webhook_url",
  "unauthorized",
  "forbidden",
  "not_found",
  "payload_too_large",
  "rate_limited",
  "internal_error",
  "idempotency_key_reused",
  "execution_finished",
  "webhook_not_redeliverable",
  "unsupported_media_type"
)
export type ErrorCode = typeof ErrorCode.Type

/** What is wrong with one input (docs/api.md). */
export const InputProblemKind = Schema.Literal(
  "unknown_parameter",
  "missing_required",
  "empty",
  "wrong_type",
  "not_an_option",
  "invalid_url",
  "too_long"
)
export type InputProblemKind = typeof InputProblemKind.Type

/**
 * One entry of `details` for `invalid_inputs`: the parameter name (or the unknown key as sent),
 * the problem, and what would have been accepted.
 */
export const InputProblem = Schema.Struct({
  parameter: Schema.String,
  problem: InputProblemKind,
  expected: Schema.optional(Schema.Union(Schema.String, Schema.Array(Schema.String)))
})
export type InputProblem = typeof InputProblem.Type

/** The error object. `details` appears for `invalid_inputs` and where a problem has parts. */
export const ErrorInfo = Schema.Struct({
  code: ErrorCode,
  message: Schema.String,
  details: Schema.optional(Schema.Array(Schema.Unknown))
})
export type ErrorInfo = typeof ErrorInfo.Type

/** The whole error response body. */
export const ErrorBody = Schema.Struct({ error: ErrorInfo })
export type ErrorBody = typeof ErrorBody.Type
