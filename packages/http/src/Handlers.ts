/**
 * The handlers of the six endpoints over the `Appexec` facade and the `SigningKeys` service.
 * Core's request errors become the API's error responses; a `StorageError` is a defect here,
 * answered 500 with a request id by the app around the API (`AppexecHttp`).
 */
import { Appexec, type Errors, SigningKeys } from "@appexec/core"
import { HttpApiBuilder, HttpApiError } from "@effect/platform"
import { Cause, Effect, Layer, Option } from "effect"
import { AppexecApi } from "@appexec/api/Api"
import { invalidRequest } from "@appexec/api/ApiError"
import { fromRequestError } from "./ErrorMapping.js"
import * as Auth from "./Auth.js"
import { CurrentPrincipal } from "@appexec/api/Authentication"
import { readJsonBody } from "./internal/jsonBody.js"

/** Default bound of a request body: 1 MiB (DESIGN §3). */
export const DEFAULT_MAX_BODY_BYTES = 1024 * 1024

/** What the handlers need to know besides the facade. */
export interface HandlerOptions {
  /** Largest accepted request body, in bytes. */
  readonly maxBodyBytes?: number
}

/** Request errors answer in the error body; storage failures are defects. */
const answer = <A, E extends Errors.RequestError>(effect: Effect.Effect<A, E | Errors.StorageError>) =>
  effect.pipe(
    Effect.catchIf(
      (e): e is Errors.StorageError => e._tag === "StorageError",
      (e) => Effect.die(e)
    ),
    Effect.mapError((e) => fromRequestError(e as E))
  )

const isPlainObject = (u: unknown): u is Record<string, unknown> =>
  typeof u === "object" && u !== null && !Array.isArray(u)

/** List, detail, workflow and start. */
export const apps = (options: HandlerOptions = {}) =>
  HttpApiBuilder.group(AppexecApi, "apps", (handlers) =>
    Effect.gen(function* () {
      const appexec = yield* Appexec.Appexec
      const maxBodyBytes = options.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES
      return handlers
        .handle("listApps", ({ urlParams }) =>
          CurrentPrincipal.pipe(
            Effect.flatMap((principal) => answer(appexec.apps.list(principal, urlParams))),
            Effect.map((data) => ({ data }))
          )
        )
        .handle("getApp", ({ path }) =>
          CurrentPrincipal.pipe(
            Effect.flatMap((principal) => answer(appexec.apps.get(principal, path.appId))),
            Effect.map((data) => ({ data }))
          )
        )
        .handle("getWorkflow", ({ path }) =>
          CurrentPrincipal.pipe(
            Effect.flatMap((principal) => answer(appexec.apps.workflow(principal, path.appId))),
            Effect.map((data) => ({ data }))
          )
        )
        // Raw, so that the body is read here within its size bound and every malformed body is a 400.
        .handleRaw("startExecution", ({ path, urlParams, request }) =>
          Effect.gen(function* () {
            const principal = yield* CurrentPrincipal
            const body = yield* readJsonBody(request, maxBodyBytes)
            if (!isPlainObject(body)) {
              return yield* Effect.fail(invalidRequest("The request body must be a JSON object: { \"inputs\": { … } }."))
            }
            if (!("inputs" in body)) {
              return yield* Effect.fail(invalidRequest("The request body has no 'inputs' object: send { \"inputs\": { … } }."))
            }
            if (!isPlainObject(body.inputs)) {
              return yield* Effect.fail(invalidRequest("'inputs' must be an object keyed by parameter name."))
            }
            const data = yield* answer(
              appexec.executions.start(principal, path.appId, body.inputs, { webhook: urlParams.webhook })
            )
            return { data }
          })
        )
    })
  )

/** Execution status. */
export const executions = HttpApiBuilder.group(AppexecApi, "executions", (handlers) =>
  Effect.gen(function* () {
    const appexec = yield* Appexec.Appexec
    return handlers.handle("getExecution", ({ path }) =>
      CurrentPrincipal.pipe(
        Effect.flatMap((principal) => answer(appexec.executions.get(principal, path.executionId))),
        Effect.map((data) => ({ data }))
      )
    )
  })
)

/** The verification key set. */
export const webhooks = HttpApiBuilder.group(AppexecApi, "webhooks", (handlers) =>
  Effect.gen(function* () {
    const keys = yield* SigningKeys.SigningKeys
    return handlers.handle("getSigningKey", () => Effect.orDie(keys.keySet))
  })
)

/**
 * Decoding errors of paths and queries (a `limit` that is not an integer from 1 to 100, …)
 * answer 400 `invalid_request` in the error body, naming what was wrong.
 */
export const decodeErrors = HttpApiBuilder.middleware(AppexecApi, (app) =>
  Effect.catchAllCause(app, (cause) => {
    const failure = Cause.failureOption(cause)
    return Option.isSome(failure) && isDecodeError(failure.value)
      ? Effect.fail(invalidRequest(describeDecodeError(failure.value)))
      : Effect.failCause(cause)
  })
)

const isDecodeError = (u: unknown): u is HttpApiError.HttpApiDecodeError =>
  u instanceof HttpApiError.HttpApiDecodeError

/** What each query parameter must be, said once instead of the schema's every branch. */
const expectations: Readonly<Record<string, string>> = {
  limit: `'limit' must be an integer from ${Appexec.LIST_LIMIT.min} to ${Appexec.LIST_LIMIT.max}`
}

const describeDecodeError = (error: HttpApiError.HttpApiDecodeError) => {
  const problems = new Set<string>()
  for (const issue of error.issues) {
    const path = issue.path.join(".")
    // An optional parameter also "expects undefined"; that branch says nothing useful.
    if (/^Expected undefined/.test(issue.message)) continue
    problems.add(expectations[path] ?? `${path === "" ? "" : `'${path}' `}${issue.message}`)
  }
  return problems.size === 0 ? "The request is not valid." : `The request is not valid: ${[...problems].join("; ")}.`
}

/** The API with every handler and middleware, over `Appexec` and `SigningKeys`. */
export const layer = (options: HandlerOptions = {}) =>
  HttpApiBuilder.api(AppexecApi).pipe(
    Layer.provide([apps(options), executions, webhooks, decodeErrors]),
    Layer.provide(Auth.layer)
  )
