/**
 * The one mapping from what can go wrong with a request to its answer: every non-2xx answer
 * carries the error body `{ "error": { "code", "message", "details"? } }` declared by the API's
 * error classes (`ApiError`). Core decides the code and the message; the status of a code is the
 * one the API definition declares for the error class that carries it (`statusOf`), so it is
 * written once, there. A storage failure is a 500 that names the request id and nothing else.
 */
import { Api, ApiError, type ErrorBody, Execution } from "@appexec/api"
import type { Errors } from "@appexec/core"
import * as HttpApiSchema from "@effect/platform/HttpApiSchema"
import { ParseResult } from "effect"
import { json, type ServerResponse } from "./Exchange.js"

/** Every error body is smaller than this, in bytes, whatever the request (docs/http.md). */
export const MAX_ERROR_BODY_BYTES = 64 * 1024

/** A message longer than this (in UTF-16 units, at most 3 bytes each in UTF-8) is cut. */
const MAX_MESSAGE_LENGTH = 4_000

/** `details` are cut to entries whose JSON stays under this many bytes. */
const MAX_DETAILS_BYTES = 32 * 1024

const utf8 = new TextEncoder()

/** The message, cut to `MAX_MESSAGE_LENGTH` with "…" when longer (it may echo what a client sent). */
const boundedMessage = (message: string) =>
  message.length > MAX_MESSAGE_LENGTH ? `${message.slice(0, MAX_MESSAGE_LENGTH)}…` : message

/** The leading entries of `details` whose JSON fits `MAX_DETAILS_BYTES`. */
const boundedDetails = (details: ReadonlyArray<unknown>): ReadonlyArray<unknown> => {
  const kept: Array<unknown> = []
  let bytes = 2
  for (const entry of details) {
    bytes += utf8.encode(JSON.stringify(entry) ?? "null").byteLength + 1
    if (bytes > MAX_DETAILS_BYTES) break
    kept.push(entry)
  }
  return kept
}

/**
 * The error answer with `status` and `info`. The body stays under `MAX_ERROR_BODY_BYTES`: a long
 * message is cut, and so are `details`.
 */
export const answer = (
  status: number,
  info: ErrorBody.ErrorInfo,
  headers: Readonly<Record<string, string>> = {}
): ServerResponse => {
  const message = boundedMessage(info.message)
  const error: ErrorBody.ErrorInfo = info.details === undefined
    ? { code: info.code, message }
    : { code: info.code, message, details: boundedDetails(info.details) }
  return json(status, { error }, headers)
}

/** The API's error classes: each carries some codes, and its status in its annotation. */
const errorClasses = [
  ApiError.BadRequest,
  ApiError.Unauthenticated,
  ApiError.Forbidden,
  ApiError.NotFound,
  ApiError.Conflict,
  ApiError.PayloadTooLarge,
  ApiError.UnsupportedMediaType,
  ApiError.TooManyRequests,
  ApiError.InternalError
] as const

/**
 * The codes the classes carry. `statusOf` takes only these and is called with every
 * `ErrorBody.ErrorCode`, so a code that no class carries is a compile error.
 */
type CarriedCode = (typeof errorClasses)[number]["fields"]["error"]["fields"]["code"]["literals"][number]

/** The status of each code, read once from the annotations of `errorClasses`. */
const statuses: ReadonlyMap<CarriedCode, number> = new Map(
  errorClasses.flatMap((errorClass) => {
    const status = HttpApiSchema.getStatusError(errorClass)
    return errorClass.fields.error.fields.code.literals.map((code) => [code, status] as const)
  })
)

/** The status the API definition declares for `code`. */
export const statusOf = (code: CarriedCode): number => statuses.get(code) ?? 500

/** The error answer to `info`, with the status of its code. */
export const fromInfo = (info: ErrorBody.ErrorInfo, headers: Readonly<Record<string, string>> = {}): ServerResponse =>
  answer(statusOf(info.code), info, headers)

/** The answer to a core request error. */
export const fromRequestError = (error: Errors.RequestError): ServerResponse =>
  fromInfo(
    error._tag === "InvalidInputs"
      ? { code: error.code, message: error.message, details: error.problems }
      : error._tag === "UnsupportedMedia"
      ? {
        code: error.code,
        message: error.message,
        details: [{ declared: error.declared, ...(error.actual === undefined ? {} : { actual: error.actual }) }]
      }
      : { code: error.code, message: error.message }
  )

/** 400 `invalid_request` with `message`. */
export const invalidRequest = (message: string): ServerResponse => fromInfo({ code: "invalid_request", message })

/** 500 `internal_error`: the request id under which the failure was logged, nothing else. */
export const internalError = (requestId: string): ServerResponse =>
  fromInfo({
    code: "internal_error",
    message: `An unexpected error occurred. Quote request id ${requestId} when reporting it.`,
    details: [{ requestId }]
  })

/**
 * 413 `payload_too_large`, with `Connection: close`: what the client still sends of the body is
 * dropped (up to a bound, docs/http.md#request-bodies), and the connection is not reused.
 */
export const payloadTooLarge = (
  maxBytes: number,
  message = `The request body is larger than ${maxBytes} bytes.`
): ServerResponse => fromInfo({ code: "payload_too_large", message }, { connection: "close" })

/** 404 for a path that is no endpoint. */
export const notFound = (method: string, path: string): ServerResponse =>
  fromInfo({
    code: "not_found",
    message: `No endpoint ${method} ${path}. The endpoints are listed in the API documentation.`
  })

/**
 * 404 for a path outside the base path the app is mounted under, naming it: a host that strips
 * or forgets the prefix is told where the endpoints are.
 */
export const notMounted = (method: string, path: string, basePath: string): ServerResponse =>
  fromInfo({
    code: "not_found",
    message:
      `No endpoint ${method} ${path}: appexec is mounted under ${basePath}, its endpoints are at ${basePath}/v1/….`
  })

/**
 * 404 for a path that holds `/v1/` after a prefix while the app has no base path: the host mounts
 * it under a prefix it was not told about.
 */
export const prefixUnknown = (method: string, path: string): ServerResponse =>
  fromInfo({
    code: "not_found",
    message: `No endpoint ${method} ${path}: appexec has no base path, its endpoints are at /v1/…; ` +
      "a host that mounts it under a prefix gives that prefix as its basePath."
  })

/** 405 for a path that is an endpoint's with another method (an HTTP status no API error declares). */
export const methodNotAllowed = (method: string, path: string, allow: ReadonlyArray<string>): ServerResponse =>
  answer(
    405,
    { code: "invalid_request", message: `Method ${method} is not allowed on ${path}; allowed: ${allow.join(", ")}.` },
    { allow: allow.join(", ") }
  )

/** What each query parameter must be, said once instead of the schema's every branch. */
const expectations: Readonly<Record<string, string>> = {
  // The same bounds for the app list and the execution list.
  limit: `'limit' must be an integer from ${Api.LIST_LIMIT.min} to ${Api.LIST_LIMIT.max}`,
  status: `'status' must be one of ${Execution.ExecutionStatus.literals.join(", ")}`,
  appId: "'appId' must be a UUID"
}

/** 400 `invalid_request` for a path or query that does not decode, naming what was wrong. */
export const decodeFailure = (error: ParseResult.ParseError): ServerResponse => {
  const problems = new Set<string>()
  for (const issue of ParseResult.ArrayFormatter.formatErrorSync(error)) {
    const path = issue.path.join(".")
    // An optional parameter also "expects undefined"; that branch says nothing useful.
    if (/^Expected undefined/.test(issue.message)) continue
    problems.add(expectations[path] ?? `${path === "" ? "" : `'${path}' `}${issue.message}`)
  }
  return invalidRequest(
    problems.size === 0 ? "The request is not valid." : `The request is not valid: ${[...problems].join("; ")}.`
  )
}
