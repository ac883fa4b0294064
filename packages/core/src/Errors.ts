/**
 * The errors that cross a boundary (HTTP, CLI, storage). Each request error knows its
 * error-body `code` and a message a consumer can act on; the HTTP layer only picks the status.
 */
import { type ErrorCode, type ErrorInfo, InputProblem } from "@appexec/api/ErrorBody"
import { Schema } from "effect"

/** The app does not exist (404 `not_found`). */
export class AppNotFound extends Schema.TaggedError<AppNotFound>()("AppNotFound", {
  appId: Schema.String
}) {
  readonly code: ErrorCode = "not_found"
  override get message() {
    return `App ${this.appId} does not exist.`
  }
}

/** The app is private to another workspace (403 `forbidden`, docs/api.md). */
export class AppAccessDenied extends Schema.TaggedError<AppAccessDenied>()("AppAccessDenied", {
  appId: Schema.String
}) {
  readonly code: ErrorCode = "forbidden"
  override get message() {
    return `Your workspace has no access to app ${this.appId}.`
  }
}

/** The execution does not exist or belongs to another workspace (404, never 403: docs/api.md). */
export class ExecutionNotFound extends Schema.TaggedError<ExecutionNotFound>()("ExecutionNotFound", {
  executionId: Schema.String
}) {
  readonly code: ErrorCode = "not_found"
  override get message() {
    return `Execution ${this.executionId} does not exist.`
  }
}

const describeProblem = (p: InputProblem): string => {
  const expected = p.expected === undefined ? "" : Array.isArray(p.expected) ? p.expected.join(", ") : p.expected
  switch (p.problem) {
    case "unknown_parameter":
      return p.expected === undefined
        ? `'${p.parameter}' is not a parameter of this app`
        : `'${p.parameter}' is not a parameter of this app (parameters: ${expected || "none"})`
    case "missing_required":
      return `'${p.parameter}' is required`
    case "empty":
      return `'${p.parameter}' must not be empty`
    case "wrong_type":
      return `'${p.parameter}' must be ${expected}`
    case "not_an_option":
      return `'${p.parameter}' must be one of: ${expected}`
    case "invalid_url":
      return `'${p.parameter}' must be ${expected}`
    case "too_long":
      return `'${p.parameter}' is too long (${expected})`
  }
}

/**
 * The `inputs` object breaks one or more parameter rules (400 `invalid_inputs`): the problems
 * listed, and how many more were found but not listed (`omitted`, to keep the answer small).
 */
export class InvalidInputs extends Schema.TaggedError<InvalidInputs>()("InvalidInputs", {
  problems: Schema.NonEmptyArray(InputProblem),
  omitted: Schema.optional(Schema.Number)
}) {
  readonly code: ErrorCode = "invalid_inputs"
  override get message() {
    const listed = this.problems.length
    const n = listed + (this.omitted ?? 0)
    const which = n === listed ? "" : ` (the first ${listed} listed)`
    return `${n === 1 ? "1 input is" : `${n} inputs are`} invalid${which}: ${
      this.problems.map(describeProblem).join("; ")
    }.`
  }
}

/** The `webhook` query is not an absolute http(s) URL (400 `invalid_webhook_url`). */
export class InvalidWebhookUrl extends Schema.TaggedError<InvalidWebhookUrl>()("InvalidWebhookUrl", {
  url: Schema.String,
  reason: Schema.String
}) {
  readonly code: ErrorCode = "invalid_webhook_url"
  override get message() {
    return `The webhook URL is not valid: ${this.reason}.`
  }
}

/** The request itself is malformed (400 `invalid_request`). */
export class InvalidRequest extends Schema.TaggedError<InvalidRequest>()("InvalidRequest", {
  reason: Schema.String
}) {
  readonly code: ErrorCode = "invalid_request"
  override get message() {
    return this.reason
  }
}

/** An `Idempotency-Key` already named a different start request of the workspace (409 `idempotency_key_reused`). */
export class IdempotencyKeyReused extends Schema.TaggedError<IdempotencyKeyReused>()("IdempotencyKeyReused", {
  key: Schema.String,
  executionId: Schema.String
}) {
  readonly code: ErrorCode = "idempotency_key_reused"
  override get message() {
    return `The Idempotency-Key was already used for a different request (execution ${this.executionId}); use a new key for a new request.`
  }
}

/** A cancel of an execution that has already finished (409 `execution_finished`). */
export class ExecutionFinished extends Schema.TaggedError<ExecutionFinished>()("ExecutionFinished", {
  executionId: Schema.String,
  status: Schema.String
}) {
  readonly code: ErrorCode = "execution_finished"
  override get message() {
    return `Execution ${this.executionId} has already finished (${this.status}); there is nothing to cancel.`
  }
}

/** Why a webhook cannot be redelivered now. */
export const NotRedeliverableReason = Schema.Literal("no_webhook", "not_finished", "under_way", "unknown_delivery")
export type NotRedeliverableReason = typeof NotRedeliverableReason.Type

/**
 * A redelivery of an execution's webhook that cannot be made now (409 `webhook_not_redeliverable`):
 * the execution has no webhook, has not finished (its webhook is sent when it does), has no such
 * delivery (an unknown `delivery`, or no completion webhook among its events), or the delivery is
 * under way (pending: attempts or retries to come, or a redelivery not yet sent).
 */
export class WebhookNotRedeliverable extends Schema.TaggedError<WebhookNotRedeliverable>()(
  "WebhookNotRedeliverable",
  { executionId: Schema.String, reason: NotRedeliverableReason }
) {
  readonly code: ErrorCode = "webhook_not_redeliverable"
  override get message() {
    switch (this.reason) {
      case "no_webhook":
        return `Execution ${this.executionId} was started without a webhook; there is nothing to redeliver.`
      case "not_finished":
        return `Execution ${this.executionId} has not finished; its webhook is sent when it does.`
      case "under_way":
        return `The webhook of execution ${this.executionId} is being delivered; redeliver it once its delivery is over (GET /v1/executions/${this.executionId}/webhook shows it).`
      case "unknown_delivery":
        return `Execution ${this.executionId} has no such webhook delivery; GET /v1/executions/${this.executionId}/webhook lists its deliveries.`
    }
  }
}

/** Why an upload's bytes were refused (docs/api.md#uploads). */
export const UnsupportedMediaReason = Schema.Literal("missing_type", "unsupported_type", "unrecognised", "mismatch")
export type UnsupportedMediaReason = typeof UnsupportedMediaReason.Type

/**
 * An upload whose bytes are not what its `Content-Type` says, or not a supported format at all
 * (415 `unsupported_media_type`). `supported` lists the types an upload may declare.
 */
export class UnsupportedMedia extends Schema.TaggedError<UnsupportedMedia>()("UnsupportedMedia", {
  reason: UnsupportedMediaReason,
  declared: Schema.String,
  actual: Schema.optional(Schema.String),
  supported: Schema.Array(Schema.String)
}) {
  readonly code: ErrorCode = "unsupported_media_type"
  override get message() {
    const types = this.supported.join(", ")
    switch (this.reason) {
      case "missing_type":
        return `Send the file's type as Content-Type, one of: ${types}.`
      case "unsupported_type":
        return `Uploads of '${this.declared}' are not accepted; Content-Type must be one of: ${types}.`
      case "unrecognised":
        return `The bytes are not ${this.declared} as Content-Type says, nor any format an upload may be: ${types}.`
      case "mismatch":
        return `The bytes are ${
          this.actual ?? "another type"
        }, not ${this.declared} as Content-Type says: send the file's own type.`
    }
  }
}

/**
 * Uploads are off on this instance (404 `not_found`): it has no signed media URLs of its own to
 * hand out (its media URLs are public, published by the operator elsewhere).
 */
export class UploadsUnavailable extends Schema.TaggedError<UploadsUnavailable>()("UploadsUnavailable", {}) {
  readonly code: ErrorCode = "not_found"
  override get message() {
    return "This instance takes no uploads: it hands out no signed media URLs of its own (its media URLs are public)."
  }
}

/** Why a credential was refused. */
export const UnauthorizedReason = Schema.Literal("missing", "malformed", "unknown", "revoked")
export type UnauthorizedReason = typeof UnauthorizedReason.Type

/** No usable API key (401 `unauthorized`). */
export class Unauthorized extends Schema.TaggedError<Unauthorized>()("Unauthorized", {
  reason: UnauthorizedReason
}) {
  readonly code: ErrorCode = "unauthorized"
  override get message() {
    switch (this.reason) {
      case "missing":
        return "An API key is required: send it as 'x-api-key: <key>' or 'Authorization: Bearer <key>'."
      case "malformed":
        return "The API key is malformed."
      // One message for both: a caller cannot tell a revoked key from one that never existed.
      case "unknown":
      case "revoked":
        return "The API key is not valid."
    }
  }
}

/** One problem of an app definition, naming the node it concerns when there is one. */
export const DefinitionProblem = Schema.Struct({
  node: Schema.NullOr(Schema.String),
  message: Schema.String
})
export type DefinitionProblem = typeof DefinitionProblem.Type

/** An app definition was refused on import; every problem is listed. */
export class InvalidAppDefinition extends Schema.TaggedError<InvalidAppDefinition>()("InvalidAppDefinition", {
  problems: Schema.NonEmptyArray(DefinitionProblem)
}) {
  override get message() {
    return `Invalid app definition:\n${
      this.problems
        .map((p) => `- ${p.node === null ? "" : `node '${p.node}': `}${p.message}`)
        .join("\n")
    }`
  }
}

/** A storage adapter failed; the driver's error is kept as the cause and never shown to clients. */
export class StorageError extends Schema.TaggedError<StorageError>()("StorageError", {
  operation: Schema.String,
  cause: Schema.Defect
}) {
  override get message() {
    return `Storage operation '${this.operation}' failed`
  }
}

/**
 * A setting of the instance (or of one of its parts: media URLs, node types) cannot work; the
 * layer that reads it fails with this error instead of starting.
 */
export class InvalidConfiguration extends Schema.TaggedError<InvalidConfiguration>()("InvalidConfiguration", {
  setting: Schema.String,
  reason: Schema.String
}) {
  override get message() {
    return `Invalid setting '${this.setting}': ${this.reason}`
  }
}

/** A fenced write was refused because the caller no longer holds the execution's lease. */
export class LeaseLost extends Schema.TaggedError<LeaseLost>()("LeaseLost", {
  executionId: Schema.String
}) {}

/** Request errors of the facade, each with its error-body code. */
export type RequestError =
  | AppNotFound
  | AppAccessDenied
  | ExecutionNotFound
  | InvalidInputs
  | InvalidWebhookUrl
  | InvalidRequest
  | Unauthorized
  | IdempotencyKeyReused
  | ExecutionFinished
  | WebhookNotRedeliverable
  | UnsupportedMedia
  | UploadsUnavailable

/** The error object of the response body for a request error. */
export const toErrorInfo = (error: RequestError): ErrorInfo =>
  error._tag === "InvalidInputs"
    ? { code: error.code, message: error.message, details: error.problems }
    : { code: error.code, message: error.message }
