/**
 * How an endpoint of the `HttpApi` definition is bound to its handler (`serve`): the path, the
 * query and the headers decoded with that endpoint's schemas, the answer encoded with its success
 * schema (or taken as JSON text already written, or streamed), an `ETag` and `If-None-Match` where
 * the handler asks for them. So the handlers (`Endpoints.ts`) are typed by the definition and
 * nothing is cast.
 */
import type { Authentication } from "@appexec/api"
import { Execution } from "@appexec/api"
import type { CountedStarts, Errors } from "@appexec/core"
import type * as HttpApiEndpoint from "@effect/platform/HttpApiEndpoint"
import * as HttpApiSchema from "@effect/platform/HttpApiSchema"
import type * as HttpMethod from "@effect/platform/HttpMethod"
import { Effect, Either, Option, ParseResult, Schema, type SchemaAST } from "effect"
import { entityTag, noneMatch } from "./EntityTags.js"
import * as ErrorAnswers from "./ErrorAnswers.js"
import type { ServerRequest, StreamedBody } from "./Exchange.js"
import * as JsonBody from "./JsonBody.js"

/**
 * What a counted start that inserted nothing ends with (`Appexec.executions.startCounted`): never
 * answered, since the request then goes on by its `counting` (429, or the start again the usual
 * way: `CountedStart`). Only a call that carries `counting` may end so.
 */
export class NotInserted extends Schema.TaggedError<NotInserted>()("NotInserted", {}) {}

/**
 * What a handler may fail with: a core request error, a storage failure, a refusal with its
 * answer, or a counted start that inserted nothing.
 */
export type EndpointError = Errors.RequestError | Errors.StorageError | JsonBody.Refused | NotInserted

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
  /**
   * The request's rate-limit hit, when it is to be counted by the start that inserts its
   * execution (`Appexec.executions.startCounted`); only a start endpoint reads it.
   */
  readonly counting?: CountedStarts.Counting | undefined
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
    readonly counting?: CountedStarts.Counting | undefined
  }) => Effect.Effect<Answered, EndpointError>
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
    return noneMatch(request.headers["if-none-match"], etag)
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
    run: ({ counting, params, principal, query, request, requestId }) => {
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
        requestId,
        counting
      } as Call<Path, Query, Headers>
      return Effect.flatMap(handler(call), (result) => answer(request, result))
    }
  }
}
