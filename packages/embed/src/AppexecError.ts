/**
 * The errors a host gets from an embedded instance: plain `Error` subclasses, usable with
 * `instanceof`, each with a `code` and, where the API gives them, `details`. The codes of the
 * API's error body (docs/api.md#errors: `invalid_inputs`, `not_found`, `forbidden`,
 * `execution_finished`, …) keep their meaning; a few more say what only an embedding host meets
 * (`invalid_app_definition`, `invalid_configuration`, `storage_failed`, `timeout`, `closed`,
 * `internal_error`).
 */
import * as ErrorBody from "@appexec/api/ErrorBody"
import * as Errors from "@appexec/core/Errors"
import { Cause, Option, Schema } from "effect"

/** Every code an `AppexecError` may carry. */
export type AppexecErrorCode =
  | ErrorBody.ErrorCode
  | "invalid_app_definition"
  | "invalid_configuration"
  | "storage_failed"
  | "timeout"
  | "closed"

/** What went wrong, as the API would say it: a `code`, a message, and `details` where the API gives them. */
export class AppexecError extends Error {
  /** The error code (the API's, or one of the embedding codes). */
  readonly code: AppexecErrorCode
  /** What the API lists with the code (each invalid input, each problem of a definition), if anything. */
  readonly details: ReadonlyArray<unknown> | undefined

  constructor(
    code: AppexecErrorCode,
    message: string,
    options: { readonly details?: ReadonlyArray<unknown> | undefined; readonly cause?: unknown } = {}
  ) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause })
    this.name = "AppexecError"
    this.code = code
    this.details = options.details
  }
}

/** Inputs that break their parameters' rules (`invalid_inputs`): one entry of `details` per problem. */
export class InvalidInputsError extends AppexecError {
  override readonly details: ReadonlyArray<ErrorBody.InputProblem>

  constructor(message: string, details: ReadonlyArray<ErrorBody.InputProblem>) {
    super("invalid_inputs", message, { details })
    this.name = "InvalidInputsError"
    this.details = details
  }
}

/** The app or the execution does not exist, or not for this workspace (`not_found`). */
export class NotFoundError extends AppexecError {
  constructor(message: string) {
    super("not_found", message)
    this.name = "NotFoundError"
  }
}

/** The app is private to another workspace (`forbidden`). */
export class ForbiddenError extends AppexecError {
  constructor(message: string) {
    super("forbidden", message)
    this.name = "ForbiddenError"
  }
}

/** An app definition was refused (`invalid_app_definition`): one entry of `details` per problem, `{ node, message }`. */
export class InvalidAppDefinitionError extends AppexecError {
  override readonly details: ReadonlyArray<Errors.DefinitionProblem>

  constructor(message: string, details: ReadonlyArray<Errors.DefinitionProblem>) {
    super("invalid_app_definition", message, { details })
    this.name = "InvalidAppDefinitionError"
    this.details = details
  }
}

/** A setting of `createAppexec` cannot work (`invalid_configuration`); `setting` names it. */
export class ConfigurationError extends AppexecError {
  /** The setting at fault. */
  readonly setting: string

  constructor(setting: string, message: string, cause?: unknown) {
    super("invalid_configuration", message, { cause })
    this.name = "ConfigurationError"
    this.setting = setting
  }
}

/** The words of a driver's error (or whatever a storage failure carries). */
const describe = (cause: unknown): string =>
  cause instanceof Error ? cause.message : typeof cause === "string" ? cause : String(cause)

/** The `AppexecError` of one of core's typed failures (its classes in `Errors`, each with its API code). */
export const fromFailure = (error: unknown): AppexecError => {
  if (error instanceof AppexecError) return error
  if (error instanceof Errors.InvalidInputs) return new InvalidInputsError(error.message, error.problems)
  if (error instanceof Errors.InvalidAppDefinition) return new InvalidAppDefinitionError(error.message, error.problems)
  if (error instanceof Errors.AppNotFound || error instanceof Errors.ExecutionNotFound) {
    return new NotFoundError(error.message)
  }
  if (error instanceof Errors.AppAccessDenied) return new ForbiddenError(error.message)
  if (error instanceof Errors.InvalidConfiguration) return new ConfigurationError(error.setting, error.message, error)
  if (error instanceof Errors.StorageError) {
    return new AppexecError("storage_failed", `${error.message}: ${describe(error.cause)}`, { cause: error.cause })
  }
  if (error instanceof Error && "code" in error && Schema.is(ErrorBody.ErrorCode)(error.code)) {
    return new AppexecError(error.code, error.message, { cause: error })
  }
  return new AppexecError("internal_error", describe(error), { cause: error })
}

/** The error an effect's failure becomes for the host: its typed failure, a defect, or the instance closing. */
export const fromCause = (cause: Cause.Cause<unknown>): AppexecError => {
  const failure = Cause.failureOption(cause)
  if (Option.isSome(failure)) return fromFailure(failure.value)
  const defect = Cause.dieOption(cause)
  if (Option.isSome(defect)) {
    return new AppexecError("internal_error", `appexec failed unexpectedly: ${describe(defect.value)}`, {
      cause: defect.value
    })
  }
  if (Cause.isInterruptedOnly(cause)) return closed()
  return new AppexecError("internal_error", Cause.pretty(cause))
}

/** The error of a call made once `close()` began. */
export const closed = (): AppexecError =>
  new AppexecError("closed", "The appexec instance is closed (close() was called).")
