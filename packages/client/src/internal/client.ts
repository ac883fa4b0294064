/**
 * The client's implementation (`AppexecClient.make`): the endpoints over `HttpApiClient` of the API
 * definition, the held reads of a wait, the event stream, `run` by name with core's own input
 * rules, uploads and webhook verification.
 */
import * as Api from "@appexec/api/Api"
import type * as App from "@appexec/api/App"
import * as ErrorBody from "@appexec/api/ErrorBody"
import * as Execution from "@appexec/api/Execution"
import * as InputValidation from "@appexec/core/InputValidation"
import * as MediaType from "@appexec/core/MediaType"
import type * as NodeType from "@appexec/core/NodeType"
import * as HttpApiClient from "@effect/platform/HttpApiClient"
import * as HttpClient from "@effect/platform/HttpClient"
import * as HttpClientError from "@effect/platform/HttpClientError"
import * as HttpClientRequest from "@effect/platform/HttpClientRequest"
import { Effect, Either, Option, Ref, Schema, Stream } from "effect"
import type { AppexecClientService, Inputs, ListExecutionsQuery } from "../AppexecClient.js"
import { type ClientConfig, normalizeBaseUrl } from "../ClientConfig.js"
import { ApiError, AppNameError, InvalidInputsError, type RequestError } from "../ClientError.js"
import * as Polling from "../Polling.js"
import * as WebhookKeys from "../WebhookKeys.js"
import * as WebhookRequest from "../WebhookRequest.js"
import * as EventSource from "./EventSource.js"
import { mapErrors } from "./ResponseErrors.js"
import * as Transport from "./Transport.js"

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

const isPriority = Schema.is(Execution.Priority)

/**
 * A priority the server would refuse, found before sending (the request could not be encoded):
 * the server's code and words, status 0 as no server answered.
 */
const priorityRefused = new ApiError({
  status: 0,
  code: "invalid_request",
  message: `\`priority\` must be an integer from ${Execution.PRIORITY_MIN} to ${Execution.PRIORITY_MAX} (default 0).`
})

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
        options.priority !== undefined && !isPriority(options.priority) ? Effect.fail(priorityRefused) : mapErrors(
          api.apps.startExecution({
            path: { appId },
            urlParams: options.webhook === undefined ? {} : { webhook: options.webhook },
            headers: options.idempotencyKey === undefined ? {} : { "idempotency-key": options.idempotencyKey },
            payload: {
              inputs,
              ...(options.webhookEvents === undefined ? {} : { webhookEvents: options.webhookEvents }),
              ...(options.priority === undefined ? {} : { priority: options.priority })
            }
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
          ...(options.webhookEvents === undefined ? {} : { webhookEvents: options.webhookEvents }),
          ...(options.idempotencyKey === undefined ? {} : { idempotencyKey: options.idempotencyKey }),
          ...(options.priority === undefined ? {} : { priority: options.priority })
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
      ...(config.webhookToleranceSeconds === undefined ? {} : { toleranceSeconds: config.webhookToleranceSeconds }),
      ...(config.webhookScheme === undefined ? {} : { scheme: config.webhookScheme })
    })

    const verifyWebhookRequest: AppexecClientService["verifyWebhookRequest"] = (request, options) =>
      Effect.flatMap(
        WebhookRequest.readRawBody(request, options),
        (body) => keys.verify(body, request.headers, options)
      )

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
        redeliver: (executionId, options = {}) =>
          mapErrors(
            api.executions.redeliverExecutionWebhook({
              path: { executionId },
              urlParams: options.delivery === undefined ? {} : { delivery: options.delivery }
            })
          ).pipe(
            Effect.map((r) => r.data)
          )
      }
    }
  })
