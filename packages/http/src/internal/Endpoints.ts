/**
 * The handlers of the API's endpoints over the `Appexec` facade and the `SigningKeys` service.
 * Each is bound to its endpoint of the `HttpApi` definition with `serve`, which decodes the path
 * and the query with that endpoint's schemas and encodes the answer with its success schema, so
 * the handlers are typed by the definition and nothing is cast.
 */
import { Api, type Authentication, Execution } from "@appexec/api"
import { Appexec, type Errors, SigningKeys } from "@appexec/core"
import type { HttpApiEndpoint, HttpMethod } from "@effect/platform"
import { Effect, Either, Option, ParseResult, Schema, type SchemaAST } from "effect"
import * as ErrorAnswers from "./ErrorAnswers.js"
import type { ServerRequest } from "./Exchange.js"
import * as JsonBody from "./JsonBody.js"

/** What a handler may fail with: a core request error, a storage failure, or a refusal with its answer. */
export type EndpointError = Errors.RequestError | Errors.StorageError | JsonBody.Refused

/** One call of an endpoint: its decoded path and query, the caller, and the raw request. */
export interface Call<Path, Query> {
  readonly path: [Path] extends [never] ? {} : Path
  readonly query: [Query] extends [never] ? {} : Query
  readonly principal: Authentication.Principal
  readonly request: ServerRequest
}

/** An endpoint bound to its handler, as the route table holds it. */
export interface Served {
  readonly name: string
  /** Decodes the path and query, runs the handler, and gives the JSON form of its answer. */
  readonly run: (input: {
    readonly params: Readonly<Record<string, string>>
    readonly query: Readonly<Record<string, string | ReadonlyArray<string>>>
    readonly principal: Authentication.Principal
    readonly request: ServerRequest
  }) => Effect.Effect<unknown, EndpointError>
}

const decoderOf = <A>(
  schema: Option.Option<Schema.Schema<A, unknown>>
): (input: unknown) => Either.Either<A | {}, ParseResult.ParseError> =>
  Option.match(schema, {
    onNone: () => () => Either.right({}),
    onSome: (s) => Schema.decodeUnknownEither(s, { errors: "all", onExcessProperty: "ignore" })
  })

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
  handler: (call: Call<Path, Query>) => Effect.Effect<Success, EndpointError>
): Served => {
  const decodePath = decoderOf(endpoint.pathSchema)
  const decodeQuery = decoderOf(endpoint.urlParamsSchema)
  // A success schema whose encoded form is the value's own JSON needs no encoding pass: the
  // handler's value is typed by it, and `json` writes it as the schema would have.
  const encode = isJsonFaithful(endpoint.successSchema.ast)
    ? Either.right
    : ParseResult.encodeUnknownEither(endpoint.successSchema)
  return {
    name: endpoint.name,
    run: ({ params, query, principal, request }) => {
      const path = decodePath(params)
      if (Either.isLeft(path)) return Effect.fail(refuseDecoding(path.left))
      const decodedQuery = decodeQuery(query)
      if (Either.isLeft(decodedQuery)) return Effect.fail(refuseDecoding(decodedQuery.left))
      // `path` and `query` are the values of this endpoint's own schemas, or `{}` exactly where it
      // declares none (`never` in its type, `{}` in `Call`): TypeScript cannot follow that branch.
      const call = { path: path.right, query: decodedQuery.right, principal, request } as Call<Path, Query>
      // The handler's value has the endpoint's success type: encoding it cannot fail but on a bug.
      return Effect.flatMap(
        handler(call),
        (value) => Either.match(encode(value), { onLeft: Effect.die, onRight: Effect.succeed })
      )
    }
  }
}

/** How the handlers behave. */
export interface Options {
  /** Largest accepted request body, in bytes (default 1 MiB). */
  readonly maxBodyBytes?: number
}

/** Default bound of a request body: 1 MiB. */
export const DEFAULT_MAX_BODY_BYTES = 1024 * 1024

const isPlainObject = (u: unknown): u is Record<string, unknown> =>
  typeof u === "object" && u !== null && !Array.isArray(u)

const refuse = (message: string) => new JsonBody.Refused({ response: ErrorAnswers.invalidRequest(message) })

/** Every endpoint of the API with its handler, over the facade and the signing keys. */
export const make = (options: Options = {}) =>
  Effect.gen(function*() {
    const appexec = yield* Appexec.Appexec
    const keys = yield* SigningKeys.SigningKeys
    const maxBodyBytes = options.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES
    const served: ReadonlyArray<Served> = [
      serve(Api.listApps, ({ principal, query }) =>
        Effect.map(appexec.apps.list(principal, query), (data) => ({ data }))),
      serve(Api.getApp, ({ principal, path }) =>
        Effect.map(appexec.apps.get(principal, path.appId), (data) => ({ data }))),
      serve(Api.getWorkflow, ({ principal, path }) =>
        Effect.map(appexec.apps.workflow(principal, path.appId), (data) => ({ data }))),
      // The body is read here, within its bound, so that every malformed body is a 400 and
      // every input problem is reported by core's validation, value by value.
      serve(Api.startExecution, ({ principal, path, query, request }) =>
        Effect.gen(function*() {
          const body = yield* JsonBody.read(request, maxBodyBytes)
          if (!isPlainObject(body)) {
            return yield* refuse("The request body must be a JSON object: { \"inputs\": { … } }.")
          }
          if (!("inputs" in body)) {
            return yield* refuse("The request body has no 'inputs' object: send { \"inputs\": { … } }.")
          }
          if (!isPlainObject(body.inputs)) {
            return yield* refuse("'inputs' must be an object keyed by parameter name.")
          }
          const data = yield* appexec.executions.start(principal, path.appId, body.inputs, { webhook: query.webhook })
          return { data }
        })),
      serve(Api.getExecution, ({ principal, path }) =>
        Effect.map(appexec.executions.get(principal, path.executionId), (data) => ({ data }))),
      serve(Api.getSigningKey, () =>
        keys.keySet)
    ]
    return served
  })
