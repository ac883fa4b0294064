/**
 * The handlers of the API's endpoints over the `Appexec` facade and the `SigningKeys` service.
 * Each is bound to its endpoint of the `HttpApi` definition with `serve`, which decodes the path
 * and the query with that endpoint's schemas and encodes the answer with its success schema, so
 * the handlers are typed by the definition and nothing is cast.
 */
import { Api, type Authentication, Execution, Live } from "@appexec/api"
import { Appexec, AppexecConfig, type Errors, SigningKeys } from "@appexec/core"
import type * as HttpApiEndpoint from "@effect/platform/HttpApiEndpoint"
import * as HttpApiSchema from "@effect/platform/HttpApiSchema"
import type * as HttpMethod from "@effect/platform/HttpMethod"
import { Duration, Effect, Either, Option, ParseResult, Schema, type SchemaAST, type Scope } from "effect"
import * as ErrorAnswers from "./ErrorAnswers.js"
import * as EventStream from "./EventStream.js"
import type { ServerRequest, StreamedBody } from "./Exchange.js"
import * as Heartbeats from "./Heartbeats.js"
import * as JsonBody from "./JsonBody.js"
import * as StreamSlots from "./StreamSlots.js"
import * as UploadBody from "./UploadBody.js"

/** What a handler may fail with: a core request error, a storage failure, or a refusal with its answer. */
export type EndpointError = Errors.RequestError | Errors.StorageError | JsonBody.Refused

/**
 * One call of an endpoint: its decoded path, query and headers, the caller, the raw request, and
 * the request id its log lines carry.
 */
export interface Call<Path, Query, Headers> {
  readonly path: [Path] extends [never] ? {} : Path
  readonly query: [Query] extends [never] ? {} : Query
  readonly headers: [Headers] extends [never] ? {} : Headers
  readonly principal: Authentication.Principal
  readonly request: ServerRequest
  readonly requestId: string
}

/**
 * A success value with more to its answer: headers, and, with `etag`, an `ETag` of the encoded
 * body — a request whose `If-None-Match` names it is answered 304 with no body.
 */
export class Reply<A> {
  constructor(
    readonly value: A,
    readonly options: { readonly headers?: Readonly<Record<string, string>>; readonly etag?: boolean } = {}
  ) {}
}

/**
 * A success the handler has as JSON text already: the encoding of a value of the endpoint's
 * success type, written by core from what the store kept (`Appexec.executions.getJson`), so it is
 * answered as it is, with no encoding pass. `A` is the type the text encodes.
 */
export class Written<A> {
  declare readonly _A: (_: never) => A
  constructor(
    readonly json: string,
    readonly options: { readonly headers?: Readonly<Record<string, string>>; readonly etag?: boolean } = {}
  ) {}
}

/**
 * A success sent as it is made (the event stream): a body of chunks, with its headers (its
 * `Content-Type` among them). Only an endpoint whose success is text (`HttpApiSchema.Text`) may
 * answer one.
 */
export class Streamed {
  constructor(readonly body: StreamedBody, readonly headers: Readonly<Record<string, string>>) {}
}

/** What an endpoint answered on success: its status, headers and body (JSON text; none for 304). */
export interface Answered {
  readonly status: number
  readonly headers: Readonly<Record<string, string>>
  readonly body: string | StreamedBody | undefined
}

/** An endpoint bound to its handler, as the route table holds it. */
export interface Served {
  readonly name: string
  /** Decodes the path, query and headers, runs the handler, and gives its encoded answer. */
  readonly run: (input: {
    readonly params: Readonly<Record<string, string>>
    readonly query: Readonly<Record<string, string | ReadonlyArray<string>>>
    readonly principal: Authentication.Principal
    readonly request: ServerRequest
    readonly requestId: string
  }) => Effect.Effect<Answered, EndpointError>
}

/** A strong entity tag of a body: 53 bits of a fast string hash, in hex (cyrb53). */
export const entityTag = (body: string): string => {
  let h1 = 0xdeadbeef
  let h2 = 0x41c6ce57
  for (let i = 0; i < body.length; i++) {
    const c = body.charCodeAt(i)
    h1 = Math.imul(h1 ^ c, 2654435761)
    h2 = Math.imul(h2 ^ c, 1597334677)
  }
  h1 = Math.imul(h1 ^ (h1 >>> 16), 2246822507) ^ Math.imul(h2 ^ (h2 >>> 13), 3266489909)
  h2 = Math.imul(h2 ^ (h2 >>> 16), 2246822507) ^ Math.imul(h1 ^ (h1 >>> 13), 3266489909)
  return `"${(4294967296 * (2097151 & h2) + (h1 >>> 0)).toString(16)}"`
}

/** True when an `If-None-Match` value names `etag` (or is `*`); weak tags compare by their opaque part. */
export const matchesEtag = (ifNoneMatch: string | undefined, etag: string): boolean => {
  if (ifNoneMatch === undefined) return false
  return ifNoneMatch.split(",").some((candidate) => {
    const tag = candidate.trim()
    return tag === "*" || tag === etag || tag === `W/${etag}`
  })
}

const decoderOf = <A>(
  schema: Option.Option<Schema.Schema<A, unknown>>
): (input: unknown) => Either.Either<A | {}, ParseResult.ParseError> =>
  Option.match(schema, {
    onNone: () => () => Either.right({}),
    onSome: (s) => Schema.decodeUnknownEither(s, { errors: "all", onExcessProperty: "ignore" })
  })

/**
 * The names of the properties a headers schema declares, or none when it is not a plain struct:
 * the request's other headers need not be handed to its decoder.
 */
const declaredNames = <A>(schema: Option.Option<Schema.Schema<A, unknown>>): ReadonlyArray<string> | undefined => {
  if (Option.isNone(schema)) return undefined
  let ast = schema.value.ast
  while (ast._tag === "Transformation" || ast._tag === "Refinement") ast = ast.from
  if (ast._tag !== "TypeLiteral" || ast.indexSignatures.length > 0) return undefined
  return ast.propertySignatures.map((p) => String(p.name))
}

/**
 * The headers among `names` (header names are lower-case in a request), or all of them when
 * `names` is absent; undefined when the request sends none of `names`.
 */
const pickHeaders = (
  headers: ServerRequest["headers"],
  names: ReadonlyArray<string> | undefined
): ServerRequest["headers"] | undefined => {
  if (names === undefined) return headers
  let picked: Record<string, string> | undefined
  for (const name of names) {
    const value = headers[name.toLowerCase()]
    if (value !== undefined) (picked ??= {})[name] = value
  }
  return picked
}

const isEmpty = (record: Readonly<Record<string, unknown>>): boolean => {
  for (const _ in record) return false
  return true
}

const refuseDecoding = (error: ParseResult.ParseError) =>
  new JsonBody.Refused({ response: ErrorAnswers.decodeFailure(error) })

/**
 * Whether the JSON text of a value of `ast`'s type is already its encoded form: every
 * transformation in it is the API's `Timestamp` (a `Date` in code, its ISO string on the wire,
 * which is what `JSON.stringify` writes for a `Date`), and everything else is plain JSON data.
 * Anything else (an optional with a default, a number from a string, a class) answers no.
 */
const isJsonFaithful = (ast: SchemaAST.AST, seen: Set<SchemaAST.AST> = new Set()): boolean => {
  if (seen.has(ast)) return true
  seen.add(ast)
  switch (ast._tag) {
    case "Transformation":
      return ast === Execution.Timestamp.ast
    case "Refinement":
      return isJsonFaithful(ast.from, seen)
    case "Suspend":
      return isJsonFaithful(ast.f(), seen)
    case "Union":
      return ast.types.every((member) => isJsonFaithful(member, seen))
    case "TupleType":
      return ast.elements.every((e) => isJsonFaithful(e.type, seen)) &&
        ast.rest.every((r) => isJsonFaithful(r.type, seen))
    case "TypeLiteral":
      return ast.propertySignatures.every((p) => isJsonFaithful(p.type, seen)) &&
        ast.indexSignatures.every((i) => isJsonFaithful(i.type, seen))
    case "Literal":
    case "StringKeyword":
    case "NumberKeyword":
    case "BooleanKeyword":
    case "UnknownKeyword":
    case "UndefinedKeyword":
    case "Enums":
    case "TemplateLiteral":
      return true
    default:
      return false
  }
}

/** Binds `handler` to `endpoint`. */
export const serve = <
  Name extends string,
  Method extends HttpMethod.HttpMethod,
  Path,
  Query,
  Payload,
  Headers,
  Success,
  Error
>(
  endpoint: HttpApiEndpoint.HttpApiEndpoint<Name, Method, Path, Query, Payload, Headers, Success, Error>,
  handler: (
    call: Call<Path, Query, Headers>
  ) => Effect.Effect<
    Success | Reply<Success> | Written<Success> | ([Success] extends [string] ? Streamed : never),
    EndpointError
  >
): Served => {
  const decodePath = decoderOf(endpoint.pathSchema)
  const decodeQuery = decoderOf(endpoint.urlParamsSchema)
  const decodeHeaders = decoderOf(endpoint.headersSchema)
  const headerNames = declaredNames(endpoint.headersSchema)
  // What a request without any of the declared headers, or without a query, decodes to: the
  // same every time, so decoded once (most requests send neither).
  const noHeaders = decodeHeaders({})
  const noQuery = decodeQuery({})
  // A success schema whose encoded form is the value's own JSON needs no encoding pass: the
  // handler's value is typed by it, and `JSON.stringify` writes it as the schema would have.
  const encode = isJsonFaithful(endpoint.successSchema.ast)
    ? Either.right
    : ParseResult.encodeUnknownEither(endpoint.successSchema)
  const status = HttpApiSchema.getStatusSuccess(endpoint.successSchema)
  const answerWith = (request: ServerRequest, body: string, options: Reply<Success>["options"]): Answered => {
    if (options.etag !== true) return { status, headers: options.headers ?? {}, body }
    const etag = entityTag(body)
    const answerHeaders = options.headers === undefined ? { etag } : Object.assign({}, options.headers, { etag })
    return matchesEtag(request.headers["if-none-match"], etag)
      ? { status: 304, headers: answerHeaders, body: undefined }
      : { status, headers: answerHeaders, body }
  }
  const answer = (
    request: ServerRequest,
    result: Success | Reply<Success> | Written<Success> | Streamed
  ): Effect.Effect<Answered> => {
    if (result instanceof Streamed) return Effect.succeed({ status, headers: result.headers, body: result.body })
    if (result instanceof Written) return Effect.succeed(answerWith(request, result.json, result.options))
    const reply = result instanceof Reply ? result : new Reply(result)
    // The handler's value has the endpoint's success type: encoding it cannot fail but on a bug.
    const encoded = encode(reply.value)
    if (Either.isLeft(encoded)) return Effect.die(encoded.left)
    return Effect.succeed(answerWith(request, JSON.stringify(encoded.right), reply.options))
  }
  // Every request of the endpoint runs this: plain steps, no generator.
  return {
    name: endpoint.name,
    run: ({ params, principal, query, request, requestId }) => {
      const path = decodePath(params)
      if (Either.isLeft(path)) return Effect.fail(refuseDecoding(path.left))
      const decodedQuery = isEmpty(query) ? noQuery : decodeQuery(query)
      if (Either.isLeft(decodedQuery)) return Effect.fail(refuseDecoding(decodedQuery.left))
      const picked = pickHeaders(request.headers, headerNames)
      const headers = picked === undefined ? noHeaders : decodeHeaders(picked)
      if (Either.isLeft(headers)) return Effect.fail(refuseDecoding(headers.left))
      // `path`, `query` and `headers` are the values of this endpoint's own schemas, or `{}`
      // exactly where it declares none (`never` in its type, `{}` in `Call`): TypeScript cannot
      // follow that branch.
      const call = {
        path: path.right,
        query: decodedQuery.right,
        headers: headers.right,
        principal,
        request,
        requestId
      } as Call<Path, Query, Headers>
      return Effect.flatMap(handler(call), (result) => answer(request, result))
    }
  }
}

/** How the handlers behave. */
export interface Options {
  /** Largest accepted request body, in bytes (default 1 MiB). */
  readonly maxBodyBytes?: number
  /** Largest accepted upload (`POST /v1/uploads`), in bytes (default 25 MiB, `Api.DEFAULT_MAX_UPLOAD_BYTES`). */
  readonly maxUploadBytes?: number
  /**
   * Uploads this app reads at once (default 8, `DEFAULT_UPLOADS_AT_ONCE`): one more is answered
   * 429 at once, before its body is read, so uploads hold at most this many times
   * `maxUploadBytes` of memory.
   */
  readonly uploadsAtOnce?: number
}

/** Default of `uploadsAtOnce`. */
export const DEFAULT_UPLOADS_AT_ONCE = 8

/** 429 for an upload beyond `uploadsAtOnce`. */
const tooManyUploads = (max: number) =>
  new JsonBody.Refused({
    response: ErrorAnswers.fromInfo({
      code: "rate_limited",
      message: `This server is receiving ${max} uploads at once, the most it takes; retry after 1 s.`
    }, { "retry-after": "1" })
  })

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

/**
 * Every endpoint of the API with its handler, over the facade and the signing keys. The event
 * streams are capped per key at `AppexecConfig.maxStreamsPerKey` (its default when the context
 * holds no `AppexecConfig`), and end when the scope closes.
 */
export const make = (
  options: Options = {}
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
    const uploadsAtOnce = Math.max(1, options.uploadsAtOnce ?? DEFAULT_UPLOADS_AT_ONCE)
    const uploadSlots = yield* Effect.makeSemaphore(uploadsAtOnce)
    const config = yield* Effect.serviceOption(AppexecConfig.AppexecConfig)
    const slots = StreamSlots.make(
      Option.match(config, {
        onNone: () => AppexecConfig.defaults.maxStreamsPerKey,
        onSome: (settings) => settings.maxStreamsPerKey
      })
    )
    // The heartbeats of the app's open event streams, which end when the app stops.
    const heartbeats = yield* Heartbeats.make(EventStream.heartbeatEvery)
    const served: ReadonlyArray<Served> = [
      serve(Api.listApps, ({ principal, query }) =>
        Effect.map(appexec.apps.list(principal, query), (data) => ({ data }))),
      serve(Api.getApp, ({ principal, path }) =>
        Effect.map(appexec.apps.get(principal, path.appId), (data) => ({ data }))),
      serve(Api.getWorkflow, ({ principal, path }) =>
        Effect.map(appexec.apps.workflow(principal, path.appId), (data) => ({ data }))),
      // The body is read here, within its bound, so that every malformed body is a 400 and
      // every input problem is reported by core's validation, value by value.
      serve(Api.startExecution, ({ principal, path, query, headers, request }) =>
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
            return Effect.map(
              appexec.executions.start(principal, path.appId, body.inputs, {
                webhook: query.webhook,
                idempotencyKey: headers["idempotency-key"]
              }),
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
            matchesEtag(ifNoneMatch, entityTag(`{"data":${json}}`))
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
        ({ principal, path }) =>
          Effect.map(appexec.executions.redeliver(path.executionId, principal), (data) => ({ data }))
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
                        requestId
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
      // The bytes are read here within their bound (413 past it, before more is read), at most
      // `uploadsAtOnce` bodies at a time (429 beyond), then checked against their declared type
      // and stored by core.
      serve(Api.uploadFile, ({ principal, request }) =>
        uploadSlots.withPermitsIfAvailable(1)(
          Effect.flatMap(UploadBody.read(request, maxUploadBytes), (bytes) =>
            Effect.map(
              appexec.uploads.create(principal, { contentType: request.headers["content-type"], bytes }),
              (data) => ({ data })
            ))
        ).pipe(
          Effect.flatMap(Option.match({
            onNone: () => Effect.fail(tooManyUploads(uploadsAtOnce)),
            onSome: Effect.succeed
          }))
        ))
    ]
    return served
  })
