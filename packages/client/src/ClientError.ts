/**
 * The errors of the client. Each says what happened in words a consumer can act on, and carries
 * the facts as fields: the HTTP status and error-body code of a refused request (docs/api.md#errors,
 * docs/api.md), whether a failed request may have reached the server, which inputs are wrong and
 * what would have been accepted, which app a name did not pick out, and why a wait ended early.
 */
import * as App from "@appexec/api/App"
import * as ErrorBody from "@appexec/api/ErrorBody"
import * as Execution from "@appexec/api/Execution"
import * as Errors from "@appexec/core/Errors"
import { Schema } from "effect"

/** The codes of the error body, and `unexpected_response` for an answer that is not one. */
export const ApiErrorCode = Schema.Union(ErrorBody.ErrorCode, Schema.Literal("unexpected_response"))
export type ApiErrorCode = typeof ApiErrorCode.Type

/**
 * The server answered with an error status: `status`, the error-body `code`, its `message` and
 * `details` (one entry per wrong input for `invalid_inputs`; the request id for a 500). The
 * client has already retried what docs/api.md#errors allows before failing with it. `unexpected_response`
 * marks an answer that is not appexec's (a proxy's error page, a body that does not decode);
 * its `status` is 0 when it is not known.
 */
export class ApiError extends Schema.TaggedError<ApiError>()("ApiError", {
  status: Schema.Number,
  code: ApiErrorCode,
  message: Schema.String,
  details: Schema.optional(Schema.Array(Schema.Unknown))
}) {
  /** `404 not_found: App … does not exist.` */
  override toString(): string {
    return `${this.status} ${this.code}: ${this.message}`
  }
}

/** Why a request got no answer. */
export const NetworkFailure = Schema.Literal(
  /** No answer within the request timeout. */
  "timeout",
  /** The connection was refused or the host is unknown: the request was never sent. */
  "unreachable",
  /** The connection broke, or the request could not be built; it may or may not have arrived. */
  "network"
)
export type NetworkFailure = typeof NetworkFailure.Type

/** A request got no HTTP answer. `sent` is false only when the request provably never left this process. */
export class NetworkError extends Schema.TaggedError<NetworkError>()("NetworkError", {
  reason: NetworkFailure,
  method: Schema.String,
  url: Schema.String,
  sent: Schema.Boolean,
  message: Schema.String
}) {}

/**
 * The inputs do not fit the app's parameters. `source` says who found it: `local` (checked
 * against the app detail before sending) or `server` (a 400 `invalid_inputs`, after which the
 * client read the app detail again, docs/api.md#versioning). `parameters` are the app's current parameters:
 * the names, types, labels and defaults to rebuild the inputs from.
 */
export class InvalidInputsError extends Schema.TaggedError<InvalidInputsError>()("InvalidInputsError", {
  appId: Schema.String,
  source: Schema.Literal("local", "server"),
  problems: Schema.Array(ErrorBody.InputProblem),
  parameters: Schema.Array(App.Parameter)
}) {
  override get message(): string {
    const problems = this.problems
    if (problems.length === 0) return `The inputs for app ${this.appId} were refused.`
    return new Errors.InvalidInputs({ problems: [problems[0]!, ...problems.slice(1)] }).message
  }
}

/** Why a wait ended before the execution did. */
export const WaitFailure = Schema.Literal("timeout", "aborted")
export type WaitFailure = typeof WaitFailure.Type

/**
 * `executions.wait` (or `run`) stopped before the execution reached `completed` or `failed`:
 * its `timeout` passed or its `signal` was aborted. The execution itself goes on; poll it again
 * with its `executionId` later.
 */
export class WaitError extends Schema.TaggedError<WaitError>()("WaitError", {
  reason: WaitFailure,
  executionId: Schema.String,
  lastStatus: Schema.NullOr(Execution.ExecutionStatus)
}) {
  override get message(): string {
    const seen = this.lastStatus === null ? "before its first status was read" : `while it was ${this.lastStatus}`
    return this.reason === "timeout"
      ? `Stopped waiting for execution ${this.executionId} ${seen}: the wait timed out. It goes on; poll it again later.`
      : `Stopped waiting for execution ${this.executionId} ${seen}: the wait was aborted. It goes on; poll it again later.`
  }
}

/** Every error a request of the client can end with. */
export type RequestError = ApiError | NetworkError

/** A webhook's signature verified, but its body is not the execution payload of docs/api.md#webhooks. */
export class WebhookPayloadError extends Schema.TaggedError<WebhookPayloadError>()("WebhookPayloadError", {
  message: Schema.String
}) {}

/** Why an app name picked out no single app. */
export const AppNameProblem = Schema.Literal(
  /** No app the key can run has that name. */
  "unknown",
  /** Several apps have that name: give an app id instead. */
  "ambiguous"
)
export type AppNameProblem = typeof AppNameProblem.Type

/**
 * `run` (or `apps.resolve`) was given an app name (`app`) that no app, or more than one, has:
 * by exact name, or else by name in any case. `matches` are the apps that share the name when
 * it is `ambiguous` (their ids tell them apart), and empty when it is `unknown`.
 */
export class AppNameError extends Schema.TaggedError<AppNameError>()("AppNameError", {
  /** The name as given. */
  app: Schema.String,
  reason: AppNameProblem,
  matches: Schema.Array(App.AppSummary)
}) {
  override get message(): string {
    return this.reason === "unknown"
      ? `No app is named '${this.app}'. GET /v1/apps lists the apps this key can run.`
      : `${this.matches.length} apps are named '${this.app}'; give its id instead: ${
        this.matches.map((a) => a.appId).join(", ")
      }.`
  }
}
