/**
 * The appexec client for Effect programs: the six endpoints of docs/api.md#endpoints and the
 * extensions (cancel, the execution list, the webhook delivery and its redelivery, uploads) as typed methods
 * (`HttpApiClient` over the API definition of `@appexec/api`, so request and response schemas
 * are the server's own), the live events of an execution (`stream`, docs/api.md#live-executions)
 * and its logs, waiting (on the event stream where the server offers it, else by polling), `run`
 * (find the app by id or name, validate, start, wait), and webhook verification with a cached key
 * set, from raw bytes or a web `Request`. Retries follow docs/api.md#errors (see `RetryPolicy`).
 * The Promise client (`PromiseClient`) runs this same implementation.
 */
import * as Api from "@appexec/api/Api"
import type * as App from "@appexec/api/App"
import * as ErrorBody from "@appexec/api/ErrorBody"
import type * as Execution from "@appexec/api/Execution"
import type * as Jwk from "@appexec/api/Jwk"
import type * as Live from "@appexec/api/Live"
import type * as Upload from "@appexec/api/Upload"
import * as InputValidation from "@appexec/core/InputValidation"
import * as MediaType from "@appexec/core/MediaType"
import type * as NodeType from "@appexec/core/NodeType"
import type * as WebhookVerifier from "@appexec/core/WebhookVerifier"
import * as HttpApiClient from "@effect/platform/HttpApiClient"
import * as HttpClient from "@effect/platform/HttpClient"
import * as HttpClientError from "@effect/platform/HttpClientError"
import * as HttpClientRequest from "@effect/platform/HttpClientRequest"
import { Context, Effect, Either, Layer, Option, Ref, Schema, Stream } from "effect"
import { type ClientConfig, normalizeBaseUrl } from "./ClientConfig.js"
import {
  ApiError,
  AppNameError,
  InvalidInputsError,
  type RequestError,
  type WaitError,
  type WebhookPayloadError
} from "./ClientError.js"
import type * as EventStream from "./EventStream.js"
import * as EventSource from "./internal/EventSource.js"
import { mapErrors } from "./internal/ResponseErrors.js"
import * as Transport from "./internal/Transport.js"
import * as Polling from "./Polling.js"
import * as WebhookKeys from "./WebhookKeys.js"
import * as WebhookRequest from "./WebhookRequest.js"

/** Input values keyed by parameter name, exactly as the app detail names them (docs/api.md#start-an-execution). */
export type Inputs = Readonly<Record<string, string>>

/** Query of the app list (docs/api.md#list-apps). */
export interface ListAppsQuery {
  /** Filters by name or description, case-insensitive. */
  readonly search?: string
  /** Most public apps returned (1–100, default 10); the workspace's own apps always come. */
  readonly limit?: number
}

/** Query of the execution list (docs/api.md#list-executions). */
export interface ListExecutionsQuery {
  /** Only the executions in this status. */
  readonly status?: Execution.ExecutionStatus
  /** Only the executions of this app (its id). */
  readonly appId?: string
  /** Executions per page, 1–100 (default 20). */
  readonly limit?: number
  /** The `nextCursor` of the page before: the page after it. */
  readonly cursor?: string
}

/** Options of a start. */
export interface StartOptions {
  /** An http(s) URL that receives the signed result on completion (docs/api.md#start-an-execution). */
  readonly webhook?: string
  /**
   * Sent as `Idempotency-Key` (docs/api.md#idempotent-starts): a start sent again with the same
   * key answers the first execution instead of starting another, so it is safe to retry.
   */
  readonly idempotencyKey?: string
}

/** Options of `run`: those of the start and of the wait. */
export interface RunOptions extends StartOptions, Polling.WaitOptions {
  /** Check the inputs against the app detail before sending (default true). */
  readonly validate?: boolean
  /**
   * Called once the execution is started (queued), before the wait: its id is known from then on,
   * to follow it again should this process stop waiting. May return an Effect, which `run` runs
   * before it waits.
   */
  readonly onStarted?: (started: Execution.StartedExecution) => void | Effect.Effect<void>
}

/** Options of an upload. */
export interface UploadOptions {
  /**
   * The file's media type (`image/png`, …). Default: the `type` of a `Blob`/`File` when it has
   * one, else the type its bytes show (`MediaType.sniff` of core); the server checks it against
   * the bytes either way.
   */
  readonly contentType?: string
}

/** What `upload` takes: a `File`, any `Blob`, or the bytes themselves. */
export type UploadBody = Blob | Uint8Array

/** The client's operations, as Effects. */
export interface AppexecClientService {
  /** The app endpoints (docs/api.md#endpoints). */
  readonly apps: {
    /** The apps of the caller's workspace, then up to `limit` public apps. */
    readonly list: (query?: ListAppsQuery) => Effect.Effect<ReadonlyArray<App.AppSummary>, RequestError>
    /** One app with its parameters: the source of truth for `inputs`. */
    readonly get: (appId: string) => Effect.Effect<App.AppDetail, RequestError>
    /** The app's workflow graph, for tooling. */
    readonly workflow: (appId: string) => Effect.Effect<App.WorkflowGraph, RequestError>
    /**
     * The app id of `app`: itself when it is an app id (a UUID), else the one app named exactly
     * `app` — or, when none is, named `app` in any case (`GET /v1/apps?search=`). No such app, or
     * several, fail with `AppNameError`.
     */
    readonly resolve: (app: string) => Effect.Effect<string, RequestError | AppNameError>
  }
  /** The execution endpoints (docs/api.md#endpoints) and waiting. */
  readonly executions: {
    /**
     * Starts an execution: queued, outputs are placeholders. Sent once; sent again only after a
     * 429 or when it provably never reached the server.
     */
    readonly start: (
      appId: string,
      inputs: Inputs,
      options?: StartOptions
    ) => Effect.Effect<Execution.StartedExecution, RequestError>
    /** The execution's status and outputs now. */
    readonly get: (executionId: string) => Effect.Effect<Execution.Execution, RequestError>
    /**
     * One page of the workspace's executions, newest first (docs/api.md#list-executions):
     * filtered by `status` and `appId`; `nextCursor` (null on the last page) as `cursor` reads
     * the page after it.
     */
    readonly list: (query?: ListExecutionsQuery) => Effect.Effect<Execution.ExecutionPage, RequestError>
    /**
     * Every execution `query` matches, newest first, across all pages: each page is read when the
     * stream reaches it, from `query.cursor` when given.
     */
    readonly all: (query?: ListExecutionsQuery) => Stream.Stream<Execution.Execution, RequestError>
    /**
     * How the delivery of the execution's webhook goes: `pending`, `delivered` or `failed`, with
     * every attempt and its error; null when it has no webhook (docs/webhooks.md#failed-deliveries).
     */
    readonly webhook: (executionId: string) => Effect.Effect<Execution.WebhookDelivery | null, RequestError>
    /**
     * Cancels the execution (docs/api.md#cancel-an-execution) and returns it as it is then; it
     * ends `failed` with "The execution was canceled." A finished one fails with an `ApiError`
     * of code `execution_finished`.
     */
    readonly cancel: (executionId: string) => Effect.Effect<Execution.Execution, RequestError>
    /**
     * Waits until the execution is `completed` or `failed` and returns it (either way): on its
     * event stream where the server offers it (`onStatus` sees every change as it comes,
     * `onEvent` every event), else long polling where the server supports it (each read held
     * until the execution changes), else polling every 3–5 s. The result is the same either way.
     */
    readonly wait: (
      executionId: string,
      options?: Polling.WaitOptions
    ) => Effect.Effect<Execution.Execution, RequestError | WaitError>
    /**
     * The kept log lines of the execution, oldest first (docs/api.md#live-executions); a server
     * without live executions answers 404.
     */
    readonly logs: (executionId: string) => Effect.Effect<ReadonlyArray<Live.LogLine>, RequestError>
  }
  /**
   * The execution's live events (docs/api.md#live-executions): its `execution` snapshot first and
   * at every change, its nodes' `progress` and `log` as they report; resumed with `Last-Event-ID`
   * when the connection drops; ends after the terminal `execution` event. A server without the
   * stream fails it with a 404 `ApiError` (`EventStream.isRouteMissing`).
   */
  readonly stream: (
    executionId: string,
    options?: EventStream.StreamOptions
  ) => Stream.Stream<EventStream.LiveEvent, RequestError>
  /**
   * Finds the app (`app` is its id or its name, as `apps.resolve` reads it), reads its detail,
   * checks `inputs` against it, starts an execution and waits for it; returns the execution once
   * `completed` or `failed`. Wrong inputs fail with `InvalidInputsError`, found before sending, or
   * after a 400 `invalid_inputs` from a fresh read of the app detail.
   */
  readonly run: (
    app: string,
    inputs: Inputs,
    options?: RunOptions
  ) => Effect.Effect<Execution.Execution, RequestError | WaitError | InvalidInputsError | AppNameError>
  /**
   * Reads the raw body of a webhook `Request` (fetch-style servers: Hono, Next.js route handlers,
   * Deno, workers), verifies its signature and timestamp with the cached key set, and decodes its
   * execution. Answer 401 to a `WebhookVerificationError` and ignore the body.
   */
  readonly verifyWebhookRequest: (
    request: Request,
    options?: WebhookRequest.ReadOptions
  ) => Effect.Effect<
    WebhookKeys.VerifiedDelivery,
    WebhookVerifier.WebhookVerificationError | WebhookPayloadError | RequestError
  >
  /**
   * Uploads a file (docs/api.md#uploads) and answers its signed URL, which any `url` input takes
   * as its value until `expiresAt`. Fails with an `ApiError` of code `unsupported_media_type`
   * (415) when the bytes are not of the type, `payload_too_large` (413) past the server's bound.
   * Sent once, like a start.
   */
  readonly upload: (file: UploadBody, options?: UploadOptions) => Effect.Effect<Upload.Upload, RequestError>
  /** Webhook verification (docs/api.md#get-the-webhook-signing-key, §6.3). */
  readonly webhooks: {
    /** The key set, fetched once and cached. */
    readonly keySet: Effect.Effect<Jwk.JwkSet, RequestError>
    /** Verifies a webhook's raw body and headers and decodes its execution; refetches the keys once on an unknown key. */
    readonly verify: (
      rawBody: Uint8Array | string,
      headers: WebhookVerifier.HeadersLike
    ) => Effect.Effect<
      WebhookKeys.VerifiedDelivery,
      WebhookVerifier.WebhookVerificationError | WebhookPayloadError | RequestError
    >
    /**
     * Sends the webhook of a finished execution once more (docs/api.md#redeliver-a-webhook): one
     * attempt, signed when the server sends it, no retries after it; returns the delivery, then
     * `pending`, with its earlier attempts (`executions.webhook` shows how it went). Fails with an
     * `ApiError` of code `webhook_not_redeliverable` when the execution has no webhook, has not
     * finished, or its delivery is under way. Sent once, like a start.
     */
    readonly redeliver: (executionId: string) => Effect.Effect<Execution.WebhookDelivery, RequestError>
  }
}

/** The client as a service, for programs that provide it with `layer`. */
export class AppexecClient
  extends Context.Tag("@appexec/client/AppexecClient")<AppexecClient, AppexecClientService>()
{}

/** A wire parameter as core's validator takes it. */
const toSpec = (p: App.Parameter): NodeType.ParameterSpec => ({
  name: p.name,
  type: p.type,
  required: p.required,
  ...(p.accept === undefined ? {} : { accept: p.accept }),
  ...(p.options === undefined ? {} : { options: p.options }),
  ...(p.default === undefined ? {} : { default: p.default })
})

const decodeProblems = Schema.decodeUnknownOption(Schema.Array(ErrorBody.InputProblem))

const isInvalidInputs = (error: RequestError): error is ApiError =>
  error._tag === "ApiError" && error.code === "invalid_inputs"

/** A 304 answer, which the API definition declares no schema for: the execution is unchanged. */
const isNotModified = (error: unknown): error is HttpClientError.ResponseError =>
  HttpClientError.isHttpClientError(error) && error._tag === "ResponseError" && error.response.status === 304

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i

/** The apps of `found` named `name`: exactly, or else in any case. */
const named = (found: ReadonlyArray<App.AppSummary>, name: string): ReadonlyArray<App.AppSummary> => {
  const exact = found.filter((a) => a.name === name)
  return exact.length > 0 ? exact : found.filter((a) => a.name.toLowerCase() === name.toLowerCase())
}

/** Builds a client from `config`. */
export const make = (config: ClientConfig): Effect.Effect<AppexecClientService> =>
  Effect.gen(function*() {
    const httpClient = yield* Transport.make(config)
    const baseUrl = normalizeBaseUrl(config.baseUrl)
    const api = yield* HttpApiClient.makeWith(Api.AppexecApi, { httpClient, baseUrl })
    const okClient = HttpClient.filterStatusOk(httpClient)
    const executionUrl = (executionId: string, path: string) =>
      `${baseUrl}/v1/executions/${encodeURIComponent(executionId)}/${path}`

    const apps: AppexecClientService["apps"] = {
      list: (query = {}) =>
        mapErrors(
          api.apps.listApps({
            urlParams: {
              ...(query.search === undefined ? {} : { search: query.search }),
              ...(query.limit === undefined ? {} : { limit: query.limit })
            }
          })
        ).pipe(Effect.map((r) => r.data)),
      get: (appId) => mapErrors(api.apps.getApp({ path: { appId } })).pipe(Effect.map((r) => r.data)),
      workflow: (appId) => mapErrors(api.apps.getWorkflow({ path: { appId } })).pipe(Effect.map((r) => r.data)),
      resolve: (app) =>
        UUID.test(app)
          ? Effect.succeed(app)
          : Effect.flatMap(apps.list({ search: app, limit: 100 }), (found) => {
            const matches = named(found, app)
            if (matches.length === 1) return Effect.succeed(matches[0]!.appId)
            return Effect.fail(
              new AppNameError({ app, reason: matches.length === 0 ? "unknown" : "ambiguous", matches })
            )
          })
    }

    const get = (executionId: string) =>
      mapErrors(api.executions.getExecution({ path: { executionId }, headers: {} })).pipe(Effect.map((r) => r.data))

    /**
     * The reads of one wait. The first answers at once; when it carries an `ETag`, each next one
     * asks to be held up to `hold` seconds until the execution differs from the last answer
     * (`Prefer: wait=N` with `If-None-Match`), and a 304 (unchanged all that time) stands for the
     * last answer again. A server without `ETag`s is asked to hold each read until the end.
     */
    const heldReads = (
      executionId: string,
      hold: number | false | undefined
    ): Effect.Effect<Effect.Effect<Polling.Read, RequestError>> => {
      if (hold === false) {
        return Effect.succeed(Effect.map(get(executionId), (execution) => ({ execution, held: false })))
      }
      const prefer = `wait=${
        Math.min(Api.MAX_WAIT_SECONDS, Math.max(1, Math.round(hold ?? Polling.DEFAULT_HOLD_SECONDS)))
      }`
      return Effect.map(
        Ref.make<Option.Option<{ readonly execution: Execution.Execution; readonly etag: string | undefined }>>(
          Option.none()
        ),
        (last) =>
          Effect.flatMap(Ref.get(last), (known) => {
            const headers = Option.match(known, {
              onNone: () => ({}),
              onSome: ({ etag }) => (etag === undefined ? { prefer } : { prefer, "if-none-match": etag })
            })
            const read = api.executions.getExecution({ path: { executionId }, headers, withResponse: true }).pipe(
              Effect.map(([body, response]) => ({ execution: body.data, headers: response.headers })),
              // Unchanged since the last answer (only a conditional read is answered 304).
              Effect.catchIf(isNotModified, (error) =>
                Option.match(known, {
                  onNone: () => Effect.fail(error),
                  onSome: ({ execution }) => Effect.succeed({ execution, headers: error.response.headers })
                })),
              mapErrors
            )
            return Effect.flatMap(read, ({ execution, headers: answered }) => {
              const etag = answered["etag"]
              return Effect.as(Ref.set(last, Option.some({ execution, etag })), {
                execution,
                // The first read is followed at once when the next can be held until a change.
                held: Option.isNone(known)
                  ? etag !== undefined
                  : (answered["preference-applied"] ?? "").includes("wait=")
              })
            })
          })
      )
    }

    /** One connection to the execution's event stream: the body of its `text/event-stream` answer. */
    const openEvents = (executionId: string): EventSource.Open => (lastEventId) =>
      okClient.execute(
        HttpClientRequest.get(executionUrl(executionId, "events")).pipe(
          HttpClientRequest.accept("text/event-stream"),
          lastEventId === undefined ? (r) => r : HttpClientRequest.setHeader("last-event-id", lastEventId)
        )
      ).pipe(
        Effect.flatMap((response) =>
          (response.headers["content-type"] ?? "").startsWith("text/event-stream")
            ? Effect.succeed(response.stream)
            : Effect.fail(
              new ApiError({
                status: response.status,
                code: "unexpected_response",
                message: `GET ${response.request.url} answered ${
                  response.headers["content-type"] ?? "no content type"
                } instead of an event stream.`
              })
            )
        ),
        mapErrors
      )

    const stream: AppexecClientService["stream"] = (executionId, options = {}) =>
      EventSource.follow(openEvents(executionId), {
        url: executionUrl(executionId, "events"),
        ...(config.retry === undefined ? {} : { retry: config.retry }),
        ...(options.lastEventId === undefined ? {} : { lastEventId: options.lastEventId })
      })

    const list = (query: ListExecutionsQuery = {}) =>
      mapErrors(
        api.executions.listExecutions({
          urlParams: {
            ...(query.status === undefined ? {} : { status: query.status }),
            ...(query.appId === undefined ? {} : { appId: query.appId }),
            ...(query.limit === undefined ? {} : { limit: query.limit }),
            ...(query.cursor === undefined ? {} : { cursor: query.cursor })
          }
        })
      )

    const executions: AppexecClientService["executions"] = {
      start: (appId, inputs, options = {}) =>
        mapErrors(
          api.apps.startExecution({
            path: { appId },
            urlParams: options.webhook === undefined ? {} : { webhook: options.webhook },
            headers: options.idempotencyKey === undefined ? {} : { "idempotency-key": options.idempotencyKey },
            payload: { inputs }
          })
        ).pipe(Effect.map((r) => r.data)),
      get,
      list,
      all: (query = {}) =>
        Stream.paginateEffect(query.cursor, (cursor: string | undefined) =>
          Effect.map(
            list(cursor === undefined ? query : { ...query, cursor }),
            (page): readonly [ReadonlyArray<Execution.Execution>, Option.Option<string | undefined>] => [
              page.data,
              Option.fromNullable(page.nextCursor)
            ]
          )).pipe(Stream.flattenIterables),
      webhook: (executionId) =>
        mapErrors(api.executions.getExecutionWebhook({ path: { executionId } })).pipe(Effect.map((r) => r.data)),
      cancel: (executionId) =>
        mapErrors(api.executions.cancelExecution({ path: { executionId } })).pipe(Effect.map((r) => r.data)),
      wait: (executionId, options = {}) =>
        Polling.bounded(executionId, options, (seen) => {
          const poll = Effect.flatMap(heldReads(executionId, options.hold), (read) => Polling.poll(read, seen, options))
          if (options.live === false) return poll
          return EventSource.waitFor(stream(executionId), seen, options.onEvent).pipe(
            Effect.catchIf(EventSource.pollInstead, () => poll)
          )
        }),
      logs: (executionId) =>
        mapErrors(api.executions.getExecutionLogs({ path: { executionId } })).pipe(Effect.map((r) => r.data))
    }

    /** The problems of `inputs` against the app's current parameters, by core's own rules. */
    const problemsOf = (detail: App.AppDetail, inputs: Inputs) =>
      Either.match(InputValidation.validateInputs(detail.parameters.map(toSpec), inputs), {
        onRight: () => [],
        onLeft: (e) => (e._tag === "InvalidInputs"
          ? e.problems
          : [{ parameter: "inputs", problem: "wrong_type" as const, expected: "an object" }])
      })

    const run: AppexecClientService["run"] = (app, inputs, options = {}) =>
      Effect.gen(function*() {
        const appId = yield* apps.resolve(app)
        if (options.validate !== false) {
          const detail = yield* apps.get(appId)
          const problems = problemsOf(detail, inputs)
          if (problems.length > 0) {
            return yield* new InvalidInputsError({ appId, source: "local", problems, parameters: detail.parameters })
          }
        }
        const started = yield* executions.start(appId, inputs, {
          ...(options.webhook === undefined ? {} : { webhook: options.webhook }),
          ...(options.idempotencyKey === undefined ? {} : { idempotencyKey: options.idempotencyKey })
        }).pipe(
          Effect.catchIf(isInvalidInputs, (refused) =>
            // The app's parameters may have changed since they were read (docs/api.md#versioning): read them again.
            Effect.flatMap(apps.get(appId), (detail) => {
              const local = problemsOf(detail, inputs)
              const problems = local.length > 0
                ? local
                : Option.getOrElse(decodeProblems(refused.details ?? []), () => [])
              return Effect.fail(
                new InvalidInputsError({ appId, source: "server", problems, parameters: detail.parameters })
              )
            }))
        )
        if (options.onStarted !== undefined) {
          const told = options.onStarted(started)
          if (Effect.isEffect(told)) yield* told
        }
        return yield* executions.wait(started.executionId, options)
      })

    const keys = yield* WebhookKeys.make(mapErrors(api.webhooks.getSigningKey()), {
      ...(config.webhookBrand === undefined ? {} : { brand: config.webhookBrand }),
      ...(config.webhookToleranceSeconds === undefined ? {} : { toleranceSeconds: config.webhookToleranceSeconds })
    })

    const verifyWebhookRequest: AppexecClientService["verifyWebhookRequest"] = (request, options) =>
      Effect.flatMap(WebhookRequest.readRawBody(request, options), (body) => keys.verify(body, request.headers))

    const decodeUpload = Schema.decodeUnknown(Api.UploadResponse)
    const upload: AppexecClientService["upload"] = (file, options = {}) =>
      Effect.gen(function*() {
        const bytes = file instanceof Uint8Array
          ? file
          : new Uint8Array(yield* Effect.promise(() => file.arrayBuffer()))
        const given = options.contentType ?? (file instanceof Uint8Array || file.type === "" ? undefined : file.type)
        const contentType = given ?? Option.match(MediaType.sniff(bytes), {
          // The server names the types it takes in its 415.
          onNone: () => "application/octet-stream",
          onSome: (sniffed) => sniffed.contentType
        })
        const response = yield* okClient.execute(
          HttpClientRequest.post(`${baseUrl}/v1/uploads`).pipe(HttpClientRequest.bodyUint8Array(bytes, contentType))
        )
        return (yield* decodeUpload(yield* response.json)).data
      }).pipe(mapErrors)

    return {
      apps,
      executions,
      stream,
      run,
      upload,
      verifyWebhookRequest,
      webhooks: {
        keySet: keys.keySet,
        verify: keys.verify,
        redeliver: (executionId) =>
          mapErrors(api.executions.redeliverExecutionWebhook({ path: { executionId } })).pipe(
            Effect.map((r) => r.data)
          )
      }
    }
  })

/** The client as a layer. */
export const layer = (config: ClientConfig): Layer.Layer<AppexecClient> => Layer.effect(AppexecClient, make(config))
