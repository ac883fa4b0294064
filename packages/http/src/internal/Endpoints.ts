/**
 * The handlers of the API's endpoints over the `Appexec` facade and the `SigningKeys` service.
 * Each is bound to its endpoint of the `HttpApi` definition with `EndpointBinding.serve`, which
 * decodes the path and the query with that endpoint's schemas and encodes the answer with its
 * success schema, so the handlers are typed by the definition and nothing is cast.
 */
import { Api, type Execution, Live } from "@appexec/api"
import { Appexec, AppexecConfig, SigningKeys } from "@appexec/core"
import { Duration, Effect, Either, Option, type Scope } from "effect"
import {
  type EndpointError,
  NotInserted,
  serve,
  type Served as BoundEndpoint,
  Streamed,
  Written
} from "./EndpointBinding.js"
import { entityTag, noneMatch } from "./EntityTags.js"
import * as ErrorAnswers from "./ErrorAnswers.js"
import * as EventStream from "./EventStream.js"
import * as Heartbeats from "./Heartbeats.js"
import * as JsonBody from "./JsonBody.js"
import * as StreamSlots from "./StreamSlots.js"
import * as UploadBody from "./UploadBody.js"
import * as UploadPace from "./UploadPace.js"
import * as UploadSlots from "./UploadSlots.js"

/** An endpoint bound to its handler, as the route table holds it (`EndpointBinding.serve`). */
export type Served = BoundEndpoint

/** How the handlers behave. */
export interface Options {
  /** Largest accepted request body, in bytes (default 1 MiB). */
  readonly maxBodyBytes?: number
  /** Largest accepted upload (`POST /v1/uploads`), in bytes (default 25 MiB, `Api.DEFAULT_MAX_UPLOAD_BYTES`). */
  readonly maxUploadBytes?: number
  /**
   * Uploads this app reads at once in all (default 16, `UploadSlots.defaults`), whoever sends them;
   * with `uploadsAtOncePerKey` and `uploadsAtOncePerWorkspace`, one more is answered 429 at once,
   * before its body is read, so uploads hold at most this many times `maxUploadBytes` of memory.
   */
  readonly uploadsAtOnce?: number
  /** Uploads one API key sends at once (default 4). */
  readonly uploadsAtOncePerKey?: number
  /** Uploads one workspace sends at once (default 8). */
  readonly uploadsAtOncePerWorkspace?: number
  /**
   * The least pace of an upload's body (default 1 KiB/s averaged over 10 s, `UploadPace.defaults`):
   * a slower one is cut with 408 and gives its place back; `bytesPerSecond: 0` cuts none.
   */
  readonly uploadMinimumPace?: UploadPace.MinimumPace
}

/** 429 for an upload over one of the caps of `UploadSlots`. */
const tooManyUploads = (over: UploadSlots.Over, limits: UploadSlots.Limits) => {
  const uploads = (n: number) => `${n} upload${n === 1 ? "" : "s"}`
  return new JsonBody.Refused({
    response: ErrorAnswers.fromInfo({
      code: "rate_limited",
      message: over === "key"
        ? `This API key is sending ${uploads(limits.perKey)} at once, the most one key may; retry after 1 s.`
        : over === "workspace"
        ? `This workspace is sending ${
          uploads(limits.perWorkspace)
        } at once, the most one workspace may; retry after 1 s.`
        : `This server is receiving ${uploads(limits.total)} at once, the most it takes; retry after 1 s.`
    }, { "retry-after": "1" })
  })
}

/** Default bound of a request body: 1 MiB. */
export const DEFAULT_MAX_BODY_BYTES = 1024 * 1024

const isPlainObject = (u: unknown): u is Record<string, unknown> =>
  typeof u === "object" && u !== null && !Array.isArray(u)

/**
 * The seconds of a `Prefer: wait=N` preference, at most `Api.MAX_WAIT_SECONDS`; none when absent
 * or not a whole number of at least 1 (a preference the server does not honour is ignored, as
 * RFC 7240 asks).
 */
export const preferredWait = (prefer: string | undefined): number | undefined => {
  if (prefer === undefined) return undefined
  const found = /(?:^|[,;\s])wait\s*=\s*"?(\d{1,6})"?\s*(?:$|[,;])/i.exec(prefer)
  if (found === null) return undefined
  const seconds = Number(found[1])
  return seconds < 1 ? undefined : Math.min(seconds, Api.MAX_WAIT_SECONDS)
}

/**
 * Whether an `Accept` value lets the answer be `text/event-stream`: absent, or naming it (or
 * `text/` any, or any type) with a quality above 0.
 */
export const acceptsEventStream = (accept: string | undefined): boolean => {
  if (accept === undefined || accept.trim() === "") return true
  return accept.split(",").some((range) => {
    const [type = "", ...params] = range.split(";").map((part) => part.trim().toLowerCase())
    if (type !== "text/event-stream" && type !== "text/*" && type !== "*/*") return false
    const quality = params.find((param) => /^q\s*=/.test(param))
    return quality === undefined || Number(quality.replace(/^q\s*=\s*/, "")) > 0
  })
}

/** 406 for an event stream the client does not accept. */
const notAcceptable = new JsonBody.Refused({
  response: ErrorAnswers.answer(406, {
    code: "invalid_request",
    message: "This endpoint answers server-sent events: send 'Accept: text/event-stream' (or no Accept)."
  })
})

/** 429 for a key that holds `max` event streams open. */
const tooManyStreams = (max: number) =>
  new JsonBody.Refused({
    response: ErrorAnswers.fromInfo({
      code: "rate_limited",
      message: `This API key holds ${max} event streams open, the most it may; close one before opening another.`
    }, { "retry-after": String(Live.HEARTBEAT_SECONDS) })
  })

const etagged = { etag: true } as const

const refuse = (message: string) => new JsonBody.Refused({ response: ErrorAnswers.invalidRequest(message) })

const notAnObject = refuse("The request body must be a JSON object: { \"inputs\": { … } }.")
const noInputs = refuse("The request body has no 'inputs' object: send { \"inputs\": { … } }.")
const inputsNotAnObject = refuse("'inputs' must be an object keyed by parameter name.")
const eventsNotAList = refuse("'webhookEvents' must be a list of event names, such as [\"start\", \"completed\"].")
const eventsDiffer = refuse("The query's 'webhookEvents' and the body's name different events; send them in one place.")

/**
 * The webhook events of a start as sent (docs/webhooks.md#events): the query's, comma-separated,
 * or the body's list, the same events when both are sent. Core checks the names.
 */
const startEvents = (
  query: string | undefined,
  body: unknown
): Either.Either<ReadonlyArray<unknown> | undefined, JsonBody.Refused> => {
  const fromQuery = query?.split(",").map((name) => name.trim())
  if (body === undefined) return Either.right(fromQuery)
  if (!Array.isArray(body)) return Either.left(eventsNotAList)
  const fromBody: ReadonlyArray<unknown> = body
  if (
    fromQuery !== undefined &&
    (fromQuery.some((name) => !fromBody.includes(name)) || fromBody.some((name) => !fromQuery.includes(String(name))))
  ) {
    return Either.left(eventsDiffer)
  }
  return Either.right(fromBody)
}

/**
 * Every endpoint of the API with its handler, over the facade and the signing keys. The event
 * streams are capped per key at `AppexecConfig.maxStreamsPerKey` (its default when the context
 * holds no `AppexecConfig`), and end when `heartbeats` stop (default: heartbeats of their own,
 * which stop when the scope closes).
 */
export const make = (
  options: Options = {},
  streams?: Heartbeats.Heartbeats
): Effect.Effect<
  ReadonlyArray<Served>,
  never,
  Appexec.Appexec | SigningKeys.SigningKeys | Scope.Scope
> =>
  Effect.gen(function*() {
    const appexec = yield* Appexec.Appexec
    const keys = yield* SigningKeys.SigningKeys
    const maxBodyBytes = options.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES
    const readJson = JsonBody.reader(maxBodyBytes)
    const maxUploadBytes = options.maxUploadBytes ?? Api.DEFAULT_MAX_UPLOAD_BYTES
    const uploadSlots = UploadSlots.make({
      perKey: options.uploadsAtOncePerKey ?? UploadSlots.defaults.perKey,
      perWorkspace: options.uploadsAtOncePerWorkspace ?? UploadSlots.defaults.perWorkspace,
      total: options.uploadsAtOnce ?? UploadSlots.defaults.total
    })
    const uploadPace = options.uploadMinimumPace ?? UploadPace.defaults
    const config = yield* Effect.serviceOption(AppexecConfig.AppexecConfig)
    const slots = StreamSlots.make(
      Option.match(config, {
        onNone: () => AppexecConfig.defaults.maxStreamsPerKey,
        onSome: (settings) => settings.maxStreamsPerKey
      })
    )
    // The heartbeats of the app's open event streams, which end when the app stops.
    const heartbeats = streams ?? (yield* Heartbeats.make(EventStream.heartbeatEvery))
    const frame = EventStream.makeFramer()
    const served: ReadonlyArray<Served> = [
      serve(Api.listApps, ({ principal, query }) =>
        Effect.map(appexec.apps.list(principal, query), (data) => ({ data }))),
      serve(Api.getApp, ({ principal, path }) =>
        Effect.map(appexec.apps.get(principal, path.appId), (data) => ({ data }))),
      serve(Api.getWorkflow, ({ principal, path }) =>
        Effect.map(appexec.apps.workflow(principal, path.appId), (data) => ({ data }))),
      // The body is read here, within its bound, so that every malformed body is a 400 and
      // every input problem is reported by core's validation, value by value.
      serve(Api.startExecution, ({ counting, principal, path, query, headers, request }) =>
        // Every start runs it: plain steps, no generator.
        Effect.flatMap(
          readJson(request),
          (body): Effect.Effect<{ data: Execution.StartedExecution }, EndpointError> => {
            if (!isPlainObject(body)) {
              return Effect.fail(notAnObject)
            }
            if (!("inputs" in body)) {
              return Effect.fail(noInputs)
            }
            if (!isPlainObject(body.inputs)) {
              return Effect.fail(inputsNotAnObject)
            }
            const webhookEvents = startEvents(query.webhookEvents, body.webhookEvents)
            if (Either.isLeft(webhookEvents)) {
              return Effect.fail(webhookEvents.left)
            }
            const options = {
              webhook: query.webhook,
              idempotencyKey: headers["idempotency-key"],
              webhookEvents: webhookEvents.right,
              priority: body.priority
            }
            const startCounted = appexec.executions.startCounted
            if (counting !== undefined && startCounted !== undefined) {
              return Effect.flatMap(
                startCounted(principal, path.appId, body.inputs, options, counting),
                (data) => (data === undefined ? Effect.fail(new NotInserted()) : Effect.succeed({ data }))
              )
            }
            return Effect.map(
              appexec.executions.start(principal, path.appId, body.inputs, options),
              (data) => ({ data })
            )
          }
        )),
      // Long polling (`Prefer: wait=N`) and conditional polling (`ETag`, `If-None-Match`), held
      // until the first change when both are sent: docs/api.md#long-polling.
      // The request every polling client sends: plain steps, no generator.
      // Answered with the JSON core writes from the stored columns (`executions.getJson`).
      serve(Api.getExecution, ({ principal, path, headers }) => {
        const wait = preferredWait(headers.prefer)
        if (wait === undefined) {
          return Effect.map(
            appexec.executions.getJson(principal, path.executionId),
            (json) =>
              new Written<{ readonly data: Execution.Execution }>(`{"data":${json}}`, etagged)
          )
        }
        // With `If-None-Match`, held until the execution differs from the answer it names.
        const ifNoneMatch = headers["if-none-match"]
        const unchanged = ifNoneMatch === undefined
          ? undefined
          : (json: string) =>
            noneMatch(ifNoneMatch, entityTag(`{"data":${json}}`))
        return Effect.map(
          appexec.executions.getJson(principal, path.executionId, { wait: Duration.seconds(wait), unchanged }),
          (json) =>
            new Written<{ readonly data: Execution.Execution }>(`{"data":${json}}`, {
              etag: true,
              headers: { "preference-applied": `wait=${wait}` }
            })
        )
      }),
      serve(Api.listExecutions, ({ principal, query }) =>
        appexec.executions.list(principal, query)),
      serve(
        Api.cancelExecution,
        ({ principal, path }) =>
          Effect.map(appexec.executions.cancel(path.executionId, principal), (data) => ({ data }))
      ),
      serve(
        Api.getExecutionWebhook,
        ({ principal, path }) =>
          Effect.map(appexec.executions.webhook(principal, path.executionId), (data) => ({ data }))
      ),
      serve(
        Api.redeliverExecutionWebhook,
        ({ principal, path, query }) =>
          Effect.map(appexec.executions.redeliver(path.executionId, principal, query.delivery), (data) => ({ data }))
      ),
      // Server-sent events (docs/api.md#live-executions): the execution is read (404) and a place
      // among the key's streams taken (429) before the headers; then the body runs in the adapter.
      serve(Api.getExecutionEvents, ({ headers, path, principal, query, request, requestId }) => {
        if (!acceptsEventStream(request.headers["accept"])) {
          return Effect.fail(notAcceptable)
        }
        const lastEventId = headers["last-event-id"] ?? query.lastEventId
        return Effect.flatMap(
          appexec.executions.follow(principal, path.executionId, { lastEventId }),
          (follower) =>
            Effect.flatMap(
              slots.take(principal.apiKeyId),
              Option.match({
                onNone: () => Effect.zipRight(follower.close, Effect.fail(tooManyStreams(slots.max))),
                onSome: (release) =>
                  Effect.succeed(
                    new Streamed(
                      EventStream.body(follower, {
                        release: Effect.zipRight(release, follower.close),
                        heartbeats,
                        requestId,
                        frame
                      }),
                      EventStream.headers
                    )
                  )
              })
            )
        )
      }),
      serve(
        Api.getExecutionLogs,
        ({ path, principal }) => Effect.map(appexec.executions.logs(principal, path.executionId), (data) => ({ data }))
      ),
      serve(Api.getSigningKey, () => keys.keySet),
      // The bytes are read here within their bound (413 past it, before more is read) and pace
      // (408 below it), in a place among the uploads of the key, the workspace and the process
      // (429 beyond them), then checked against their declared type and stored by core.
      serve(Api.uploadFile, ({ principal, request }) =>
        Effect.flatMap(
          uploadSlots.take(principal.apiKeyId, principal.workspaceId),
          Either.match({
            onLeft: (over) => Effect.fail(tooManyUploads(over, uploadSlots.limits)),
            onRight: (release) =>
              Effect.flatMap(UploadPace.guard(UploadBody.read(request, maxUploadBytes), request, uploadPace), (bytes) =>
                Effect.map(
                  appexec.uploads.create(principal, { contentType: request.headers["content-type"], bytes }),
                  (data) => ({ data })
                )).pipe(Effect.ensuring(release))
          })
        ))
    ]
    return served
  })
