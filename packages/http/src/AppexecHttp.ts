/**
 * The whole HTTP app of appexec: the API with its handlers, wrapped in what every request gets —
 * a request id (`X-Request-Id`), the rate limit on `/v1` with its headers, the error body for
 * paths and methods outside the API (404/405), 500 `internal_error` for a defect (logged with the
 * request id), `WWW-Authenticate: Bearer` on 401, one log line per request, and mounting under a
 * base path. Beside `/v1` it answers the signed media URLs of executions at `<base path>/media/…`
 * (see `MediaRoute`), without authentication or rate limit. It serves any platform server
 * (`NodeListener`, `WebHandler`, `HttpServer.serve`).
 */
import { Appexec, RateLimiter, RateLimitStore, SigningKeys } from "@appexec/core"
import { HttpApi, HttpApiBuilder, type HttpApp, HttpServer, HttpServerRequest, HttpServerResponse } from "@effect/platform"
import { Cause, Clock, Context, Effect, Layer, Option, Scope, Tracer } from "effect"
import { AppexecApi } from "@appexec/api/Api"
import * as Handlers from "./Handlers.js"
import * as MediaRoute from "./MediaRoute.js"
import * as RateLimit from "./RateLimit.js"

/** How the HTTP app behaves. Every field has a default. */
export interface Options extends Handlers.HandlerOptions {
  /** Path prefix the app is mounted under, e.g. `/api` (default: none). */
  readonly basePath?: string
  /** The `/v1` rate limit (default 100 requests per minute per client IP). */
  readonly rateLimit?: RateLimit.RateLimitOptions
  /** Log one line per request (default true). */
  readonly logRequests?: boolean
  /**
   * Answer signed media URLs at `<basePath>/media/…` (default true). Takes effect when the
   * context holds `MediaUrls` and a `BlobStore`, as it does wherever the built-in nodes run;
   * their base URL must include the mount path. Set false when the host serves media itself.
   */
  readonly media?: boolean
}

/** What the app needs: the facade, the signing keys and the rate-limit counters. */
export type Requirements = Appexec.Appexec | SigningKeys.SigningKeys | RateLimitStore.RateLimitStore

interface Route {
  readonly method: string
  readonly pattern: RegExp
}

/** The method and path pattern of every endpoint, read from the API definition. */
const routesOf = (): ReadonlyArray<Route> => {
  const routes: Array<Route> = []
  HttpApi.reflect(AppexecApi, {
    onGroup: () => {},
    onEndpoint: ({ endpoint }) => {
      const source = endpoint.path.replace(/[.*+?^${}()|[\]\\]/g, "\\$&").replace(/:[A-Za-z]+/g, "[^/]+")
      routes.push({ method: endpoint.method, pattern: new RegExp(`^${source}/?$`) })
    }
  })
  return routes
}

const json = (status: number, code: string, message: string, details?: ReadonlyArray<unknown>) =>
  HttpServerResponse.unsafeJson({ error: { code, message, ...(details === undefined ? {} : { details }) } }, { status })

/** Normalises a base path: `""` or `/segment…` without a trailing slash. */
export const normalizeBasePath = (basePath: string | undefined): string => {
  const trimmed = (basePath ?? "").replace(/\/+$/, "")
  return trimmed === "" ? "" : trimmed.startsWith("/") ? trimmed : `/${trimmed}`
}

/**
 * The request as the router should see it: without the base path, and with every `/` of the
 * query string escaped. The router folds repeated slashes in the whole URL, query included, so
 * an unescaped `?search=a//b` or `?webhook=https://host/a//b` would otherwise reach the handler
 * changed; query values are decoded after routing, so `%2F` arrives as `/`.
 */
const routable = (request: HttpServerRequest.HttpServerRequest, basePath: string) => {
  const url = basePath === "" ? request.url : request.url.slice(basePath.length) || "/"
  const query = url.indexOf("?")
  const escaped = query === -1 || !url.includes("/", query) ? url : `${url.slice(0, query)}${url.slice(query).replaceAll("/", "%2F")}`
  return escaped === request.url ? request : request.modify({ url: escaped })
}

const pathOf = (url: string) => {
  const q = url.indexOf("?")
  return q === -1 ? url : url.slice(0, q)
}

/**
 * The HTTP app. Scoped: the handlers live as long as the scope.
 *
 * ```ts
 * const app = yield* AppexecHttp.make({ basePath: "/api", rateLimit: { limit: 1000 } })
 * ```
 */
export const make = (
  options: Options = {}
): Effect.Effect<HttpApp.Default, never, Requirements | Scope.Scope> =>
  Effect.gen(function* () {
    // The handlers capture the context they are built in, and the router merges it into every
    // request's context: building them on just what they need keeps that copy small.
    const services = yield* Layer.build(
      Layer.mergeAll(Handlers.layer(options), HttpApiBuilder.Router.Live, HttpApiBuilder.Middleware.layer)
    ).pipe(
      Effect.mapInputContext((context: Context.Context<Appexec.Appexec | SigningKeys.SigningKeys | Scope.Scope>) =>
        Context.pick(Appexec.Appexec, SigningKeys.SigningKeys, Scope.Scope)(context)
      )
    )
    const platform = yield* Layer.build(HttpServer.layerContext)
    const api = yield* Effect.provide(HttpApiBuilder.httpApp, services)
    const store = yield* RateLimitStore.RateLimitStore
    // Every request runs on this context and its request, never on the host's (which, in `serve`,
    // holds the whole instance): the context is copied at each `provide` down the router.
    const requestContext = Context.add(platform, RateLimitStore.RateLimitStore, store)
    const policy = RateLimit.policyOf(options.rateLimit)
    const trustProxy = options.rateLimit?.trustProxy ?? RateLimit.defaults.trustProxy
    const basePath = normalizeBasePath(options.basePath)
    const logRequests = options.logRequests ?? true
    const routes = routesOf()
    const media = options.media === false ? Option.none() : yield* MediaRoute.make
    if (Option.isSome(media)) yield* MediaRoute.checkBasePath(basePath)

    /** 405 when the path is an endpoint's with another method, else 404. */
    const unmatched = (method: string, path: string) => {
      const allowed = routes.filter((r) => r.pattern.test(path)).map((r) => r.method)
      // A path the router could not decode (`/v1/apps/%ZZ`) matches a pattern but no endpoint.
      return allowed.length === 0 || allowed.includes(method)
        ? json(404, "not_found", `No endpoint ${method} ${path}. The endpoints are listed in the API documentation.`)
        : json(405, "invalid_request", `Method ${method} is not allowed on ${path}; allowed: ${allowed.join(", ")}.`).pipe(
            HttpServerResponse.setHeader("allow", allowed.join(", "))
          )
    }

    const internalError = (requestId: string) =>
      json(500, "internal_error", `An unexpected error occurred. Quote request id ${requestId} when reporting it.`, [
        { requestId }
      ])

    const respond = (method: string, path: string, requestId: string) =>
      Effect.catchAllCause(api, (cause) => {
        const failure = Cause.failureOption(cause)
        if (Option.isSome(failure) && isRouteNotFound(failure.value)) {
          return Effect.succeed(unmatched(method, path))
        }
        if (Cause.isInterruptedOnly(cause)) return Effect.failCause(cause)
        return Effect.logError("request failed", cause).pipe(Effect.as(internalError(requestId)))
      })

    const handle = (
      original: HttpServerRequest.HttpServerRequest,
      request: HttpServerRequest.HttpServerRequest,
      fullPath: string,
      mounted: boolean,
      path: string,
      requestId: string
    ) =>
      Effect.gen(function* () {
        const startedAt = logRequests ? yield* Clock.currentTimeMillis : 0
        const isV1 = mounted && (path === "/v1" || path.startsWith("/v1/"))
        const headers: Record<string, string> = { "x-request-id": requestId }
        let response: HttpServerResponse.HttpServerResponse
        if (!mounted) {
          response = json(404, "not_found", `No endpoint ${original.method} ${fullPath}.`)
        } else if (Option.isSome(media) && MediaRoute.isMediaPath(path)) {
          response = yield* media.value({ method: original.method, url: request.url, headers: original.headers, requestId })
        } else if (!isV1) {
          response = unmatched(original.method, path)
        } else {
          const decision = yield* RateLimiter.consume(RateLimit.clientIp(original, trustProxy), policy).pipe(
            Effect.tapError((error) => Effect.logError("rate limit counter failed", error)),
            Effect.option
          )
          response = Option.isNone(decision)
            ? internalError(requestId)
            : !decision.value.allowed
              ? json(
                  429,
                  "rate_limited",
                  `Rate limit of ${decision.value.limit} requests exceeded; retry after ${decision.value.resetSeconds} s.`
                )
              : yield* respond(original.method, path, requestId)
          if (Option.isSome(decision)) Object.assign(headers, RateLimit.headersOf(decision.value))
        }
        if (response.status === 401) headers["www-authenticate"] = 'Bearer realm="appexec"'
        response = HttpServerResponse.setHeaders(response, headers)
        if (logRequests) {
          const ms = (yield* Clock.currentTimeMillis) - startedAt
          yield* Effect.logInfo(`${original.method} ${fullPath} ${response.status} ${ms}ms`)
        }
        return response
      })

    const app: HttpApp.Default = Effect.flatMap(HttpServerRequest.HttpServerRequest, (original) => {
      const requestId = crypto.randomUUID()
      const fullPath = pathOf(original.url)
      const mounted = basePath === "" || fullPath === basePath || fullPath.startsWith(`${basePath}/`)
      const path = mounted ? fullPath.slice(basePath.length) || "/" : fullPath
      const request = routable(original, basePath)
      return handle(original, request, fullPath, mounted, path, requestId).pipe(
        Effect.annotateLogs("requestId", requestId),
        Effect.mapInputContext((input: Context.Context<HttpServerRequest.HttpServerRequest>) => {
          const context = Context.add(requestContext, HttpServerRequest.HttpServerRequest, request)
          // The request's span (the platform's tracer middleware) stays the parent of ours.
          const span = Context.getOption(input, Tracer.ParentSpan)
          return Option.isSome(span) ? Context.add(context, Tracer.ParentSpan, span.value) : context
        })
      )
    })
    return app
  })

const isRouteNotFound = (u: unknown): boolean =>
  typeof u === "object" && u !== null && "_tag" in u && u._tag === "RouteNotFound"
