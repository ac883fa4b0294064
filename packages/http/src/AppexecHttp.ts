/**
 * The HTTP app of appexec: the endpoints of the `HttpApi` definition (`@appexec/api`) served
 * over the `Appexec` facade, and what every request gets on the way — a request id
 * (`X-Request-Id`), the `/v1` rate limit counted per client IP before authentication with its
 * `RateLimit-*` headers, the API key check (401 with `WWW-Authenticate: Bearer`), the error body
 * for every failure (404 and 405 for paths and methods outside the API, 500 with the request id
 * for what the server did wrong, logged with it), one structured log line per request (at
 * level Debug; Info for a 5xx or a slow answer: `internal/RequestLog`), and mounting under a base
 * path. Beside `/v1` it answers the signed media URLs of executions at
 * `<base path>/media/…` (see `MediaRoute`), without key or rate limit, and when asked the console
 * at `<base path>/console` (see `ConsoleRoute`).
 *
 * The app is plain data in and out (`ServerRequest → ServerResponse`); `WebHandler` adapts it to
 * web `Request → Response`, and `NodeListener` of `@appexec/platform-node` to a Node server. The
 * one answer that is not whole when it is made, an execution's event stream, carries a streamed
 * body (`Exchange.StreamedBody`) that the adapter runs; its request is counted, logged and rate
 * limited once, when its headers are made. On a storage that counts starts (PostgreSQL), a start
 * whose key is cached has its hit counted by the statement that inserts it (`internal/CountedStart`).
 */
import { Api } from "@appexec/api"
import { Appexec, type Errors, RateLimiter, RateLimitStore, type SigningKeys } from "@appexec/core"
import { AppexecMetrics, RevisionMemo, TraceContext } from "@appexec/core"
import { Cause, type Duration, Effect, Exit, type Layer, ManagedRuntime, Option, type Runtime, Scope } from "effect"
import * as ConsoleRoute from "./ConsoleRoute.js"
import * as CountedStart from "./internal/CountedStart.js"
import type { Routed } from "./internal/CountedStart.js"
import type { NotInserted } from "./internal/EndpointBinding.js"
import * as Endpoints from "./internal/Endpoints.js"
import * as ErrorAnswers from "./internal/ErrorAnswers.js"
import * as EventStream from "./internal/EventStream.js"
import { type ServerRequest, type ServerResponse, withHeaders } from "./internal/Exchange.js"
import * as Heartbeats from "./internal/Heartbeats.js"
import * as RequestLog from "./internal/RequestLog.js"
import * as Routes from "./internal/Routes.js"
import * as MediaRoute from "./MediaRoute.js"
import * as OperatorRoutes from "./OperatorRoutes.js"
import * as RateLimit from "./RateLimit.js"

export type { ServerRequest, ServerResponse } from "./internal/Exchange.js"

/** How the HTTP app behaves. Every field has a default. */
export interface Options extends Endpoints.Options {
  /** Path prefix the app is mounted under, e.g. `/api` (default: none). */
  readonly basePath?: string
  /** The `/v1` rate limit (default 100 requests per minute per client IP). */
  readonly rateLimit?: RateLimit.RateLimitOptions
  /**
   * Log one line per request (default true): at level Debug, so that a server at the usual level
   * Info stays quiet, and at Info when the answer is a 5xx or took `slowRequest` or longer.
   */
  readonly logRequests?: boolean
  /**
   * From how long a request's line is logged at Info (default 1 second). A long poll
   * (`Prefer: wait=N`) is slow only past its N seconds and this.
   */
  readonly slowRequest?: Duration.DurationInput
  /**
   * Answer signed media URLs at `<basePath>/media/…` (default true). Takes effect when the
   * context holds `MediaUrls` and a `BlobStore`, as it does wherever the built-in nodes run;
   * their base URL must include the mount path. Set false when the host serves media itself.
   */
  readonly media?: boolean
  /**
   * Answer the operator's routes at `<basePath>/healthz`, `/readyz`, `/openapi.json`, `/docs` and `/` (to `/docs`,
   * or to `/console` when the console is on) (see `OperatorRoutes`): `true` for all of them, or
   * some (`{ health: true }`: `/healthz` and `/readyz`; `{ docs: true }`: `/openapi.json`, `/docs`
   * and `/`). Default: all of them without a base path, none under one (the host's prefix shows
   * only what it opts in to), but `/` whenever the console is on.
   */
  readonly operator?: boolean | OperatorRoutes.Selection
  /**
   * Serve the console (`@appexec/console`) at `<basePath>/console` (default false; see
   * `ConsoleRoute`): a web page that signs in with an API key and calls this API.
   */
  readonly console?: boolean
}

/** What the app needs: the facade, the signing keys and the rate-limit counters. */
export type Requirements = Appexec.Appexec | SigningKeys.SigningKeys | RateLimitStore.RateLimitStore

/** The app: answers one request, on the runtime it was made in (its logger, clock and services). */
export interface App {
  /** The answer to `request`. */
  readonly handle: (request: ServerRequest) => Effect.Effect<ServerResponse>
  readonly runtime: Runtime.Runtime<never>
}

/** The app of the API, which also ends its event streams on demand. */
export interface ApiApp extends App {
  /**
   * Ends every open event stream with a `reconnect` event (docs/api.md#live-executions), and every
   * one opened later right after its first events: for a process about to close its listener, so
   * that clients resume with `Last-Event-ID` on another server. The app's end does it too.
   */
  readonly endStreams: Effect.Effect<void>
}

/** Normalises a base path: `""` or `/segment…` without a trailing slash. */
export const normalizeBasePath = (basePath: string | undefined): string => {
  const trimmed = (basePath ?? "").replace(/\/+$/, "")
  return trimmed === "" ? "" : trimmed.startsWith("/") ? trimmed : `/${trimmed}`
}

const splitUrl = (url: string) => {
  const q = url.indexOf("?")
  return q === -1 ? { path: url, search: "" } : { path: url.slice(0, q), search: url.slice(q + 1) }
}

/** The query as a record: one string per key, an array for a key given more than once. */
const queryOf = (search: string): Record<string, string | ReadonlyArray<string>> => {
  const query: Record<string, string | Array<string>> = {}
  if (search === "") return query
  for (const [key, value] of new URLSearchParams(search)) {
    const seen = query[key]
    query[key] = seen === undefined ? value : Array.isArray(seen) ? [...seen, value] : [seen, value]
  }
  return query
}

const unauthorizedHeaders = { "www-authenticate": "Bearer realm=\"appexec\"" }

/** The headers a request's credential is read from. */
const credentialOf = (request: ServerRequest) => ({
  "x-api-key": request.headers["x-api-key"],
  authorization: request.headers["authorization"]
})

/**
 * The HTTP app over the services of the context. Scoped: it serves while the scope is open.
 *
 * Every request runs as one short fiber on the runtime the app was made in, through plain
 * functions that return effects (no generator, no span per request): the route is matched, the
 * rate limit counted, the key checked (from core's key cache) and the endpoint run. The request's
 * log line is not written on the way: it is queued and the queue is logged a few milliseconds
 * later, after the answers (a failure's lines are written at once).
 *
 * ```ts
 * const app = yield* AppexecHttp.make({ basePath: "/api", rateLimit: { limit: 1000 } })
 * ```
 */
export const make = (options: Options = {}): Effect.Effect<ApiApp, never, Requirements | Scope.Scope> =>
  Effect.gen(function*() {
    const appexec = yield* Appexec.Appexec
    const store = yield* RateLimitStore.RateLimitStore
    // The heartbeats of the app's event streams, which end when the app stops or `endStreams` runs.
    const streams = yield* Heartbeats.make(EventStream.heartbeatEvery)
    const served = new Map((yield* Endpoints.make(options, streams)).map((s) => [s.name, s]))
    const table = Routes.make()
    for (const route of table.routes) {
      if (!served.has(route.name)) return yield* Effect.dieMessage(`endpoint ${route.name} has no handler`)
      if (!route.authenticated) return yield* Effect.dieMessage(`endpoint ${route.name} is not guarded by an API key`)
    }
    const policy = RateLimit.policyOf(options.rateLimit)
    const hops = RateLimit.hopsOf(options.rateLimit?.trustProxy)
    const basePath = normalizeBasePath(options.basePath)
    const logRequests = options.logRequests ?? true
    const media = options.media === false ? Option.none() : yield* MediaRoute.make
    if (Option.isSome(media)) yield* MediaRoute.checkBasePath(basePath)
    const consoleRoute = options.console === true ? yield* ConsoleRoute.make(basePath) : undefined
    const chosen = OperatorRoutes.selectionOf(options.operator ?? basePath === "")
    // With the console on, `/` leads to it.
    const selection = { ...chosen, home: chosen.home || consoleRoute !== undefined }
    const operator = selection.docs || selection.health || selection.home
      ? yield* OperatorRoutes.make(basePath, consoleRoute === undefined ? "/docs" : ConsoleRoute.PATH, selection)
      : undefined
    const runtime = yield* Effect.runtime<never>()
    const clock = yield* Effect.clock
    const requestLog = yield* RequestLog.make(options.slowRequest)

    const failedWithStorage = (requestId: string) => (error: Errors.StorageError) =>
      Effect.logError("request failed: storage", error).pipe(
        Effect.annotateLogs("requestId", requestId),
        Effect.as(ErrorAnswers.internalError(requestId))
      )

    // The route label of the request counter and histogram: a known route, or "other" (a path a
    // client made up must not become a series of its own). One observer per label pair, made once.
    const knownRoutes = new Set<string>([
      ...table.routes.map((r) => r.template),
      MediaRoute.PREFIX,
      ...(consoleRoute === undefined ? [] : [ConsoleRoute.PATH]),
      ...(operator === undefined ? [] : OperatorRoutes.paths)
    ])
    const observers = new Map<string, Map<number, (seconds: number) => void>>()
    const countRequest = (route: string, status: number, seconds: number) => {
      const label = knownRoutes.has(route) ? route : "other"
      let byStatus = observers.get(label)
      if (byStatus === undefined) observers.set(label, byStatus = new Map())
      let observe = byStatus.get(status)
      if (observe === undefined) {
        observe = AppexecMetrics.httpRequestObserver(label, String(status))
        byStatus.set(status, observe)
      }
      observe(seconds)
    }
    // A span per request only when spans go somewhere: the default tracer keeps them to itself,
    // and a span costs more than the rest of a cached read.
    const traced = yield* TraceContext.spansExported
    // Whether the storage counts a start's hit in the statement that inserts it.
    const counts = appexec.executions.startCounted !== undefined

    /**
     * Runs an endpoint for an authenticated caller; every failure becomes its answer, but a
     * counted start's that inserted nothing (`NotInserted`), which `CountedStart` takes on.
     */
    const runEndpoint = (
      endpoint: Endpoints.Served,
      input: Parameters<Endpoints.Served["run"]>[0],
      requestId: string
    ): Effect.Effect<ServerResponse, NotInserted> =>
      Effect.matchEffect(endpoint.run(input), {
        onSuccess: (answered) =>
          Effect.succeed({
            status: answered.status,
            headers: answered.body === undefined
              ? answered.headers
              : Object.assign({ "content-type": "application/json" }, answered.headers),
            body: answered.body
          }),
        onFailure: (error) => {
          switch (error._tag) {
            case "Refused":
              return Effect.succeed(error.response)
            case "StorageError":
              return failedWithStorage(requestId)(error)
            case "NotInserted":
              return Effect.fail(error)
            default:
              return Effect.succeed(ErrorAnswers.fromRequestError(error))
          }
        }
      })

    const unauthorized = (error: Errors.Unauthorized): ServerResponse =>
      withHeaders(ErrorAnswers.fromRequestError(error), unauthorizedHeaders)

    /** A `/v1` request after the rate limit let it through (`found`: its route, when matched already). */
    const api = (
      request: ServerRequest,
      path: string,
      search: string,
      requestId: string,
      found = table.match(request.method, path)
    ): Effect.Effect<Routed, Errors.StorageError> => {
      if (found._tag === "NotFound") return Effect.succeed([ErrorAnswers.notFound(request.method, path), path] as const)
      if (found._tag === "MethodNotAllowed") {
        return Effect.succeed([ErrorAnswers.methodNotAllowed(request.method, path, found.allow), path] as const)
      }
      const route = found.route
      const endpoint = served.get(route.name)!
      const answer = appexec.keys
        .authenticate(credentialOf(request))
        .pipe(
          Effect.matchEffect({
            onSuccess: (principal) =>
              runEndpoint(
                endpoint,
                { params: found.params, query: queryOf(search), principal, request, requestId },
                requestId
              ).pipe(
                // A call without `counting` never ends so.
                Effect.catchTag("NotInserted", Effect.die)
              ),
            onFailure: (error) =>
              error._tag === "Unauthorized" ? Effect.succeed(unauthorized(error)) : Effect.fail(error)
          })
        )
      return Effect.map(answer, (response) => [response, route.template] as const)
    }

    /** 429 for a refused hit, with its headers. */
    const refused = (decision: RateLimiter.RateLimitDecision, path: string): Routed => [
      ErrorAnswers.fromInfo({
        code: "rate_limited",
        message: `Rate limit of ${decision.limit} requests exceeded; retry after ${decision.resetSeconds} s.`
      }, RateLimit.headersOf(decision)),
      path
    ]

    /**
     * A `/v1` request the usual way: its hit counted, then its key checked and its endpoint run
     * (`found`: its route, when matched already).
     */
    const hitFirst = (
      request: ServerRequest,
      path: string,
      search: string,
      requestId: string,
      now: number,
      found?: Routes.Match
    ): Effect.Effect<Routed, Errors.StorageError> =>
      Effect.flatMap(
        RateLimiter.consumeAt(store, RateLimit.clientIp(request, hops), policy, now),
        (decision): Effect.Effect<Routed, Errors.StorageError> =>
          decision.allowed
            ? Effect.map(
              api(request, path, search, requestId, found),
              ([response, route]) => [response, route, RateLimit.headersOf(decision)] as const
            )
            : Effect.succeed(refused(decision, path))
      )

    const countedStart = CountedStart.make({ served, policy, hops, runEndpoint, api, hitFirst, refused })

    const rateLimited = (
      request: ServerRequest,
      path: string,
      search: string,
      requestId: string
    ): Effect.Effect<Routed, Errors.StorageError> => {
      const now = clock.unsafeCurrentTimeMillis()
      if (counts && request.method === "POST" && request.headers["idempotency-key"] === undefined) {
        // Matched once, whichever way the request goes.
        const found = table.match(request.method, path)
        if (found._tag === "Found" && found.route.name === Api.startExecution.name) {
          const cached = appexec.keys.cached(credentialOf(request))
          if (cached !== undefined) {
            return countedStart({ request, path, search, requestId, now, found, cached, query: queryOf(search) })
          }
        }
        return hitFirst(request, path, search, requestId, now, found)
      }
      return hitFirst(request, path, search, requestId, now)
    }

    /** The answer to `request`, before the headers every answer gets. */
    const dispatch = (
      request: ServerRequest,
      requestId: string
    ): Effect.Effect<Routed, Errors.StorageError> => {
      const { path: fullPath, search } = splitUrl(request.url)
      const mounted = basePath === "" || fullPath === basePath || fullPath.startsWith(`${basePath}/`)
      if (!mounted) {
        return Effect.succeed([ErrorAnswers.notMounted(request.method, fullPath, basePath), fullPath] as const)
      }
      const path = fullPath.slice(basePath.length) || "/"
      if (Option.isSome(media) && MediaRoute.isMediaPath(path)) {
        const answer = media.value({
          method: request.method,
          url: `${path}${search === "" ? "" : `?${search}`}`,
          headers: request.headers,
          requestId
        })
        return Effect.map(answer, (response) => [response, MediaRoute.PREFIX] as const)
      }
      // One request: its reads of the store's revisions (its key's, its app's) may share one read.
      if (path === "/v1" || path.startsWith("/v1/")) {
        return RevisionMemo.withinRequest(rateLimited(request, path, search, requestId))
      }
      if (consoleRoute !== undefined && ConsoleRoute.isConsolePath(path)) {
        return Effect.succeed([consoleRoute(request.method, path, request.headers), ConsoleRoute.PATH] as const)
      }
      const operatorAnswer = operator?.(request.method, path)
      if (operatorAnswer !== undefined) return Effect.map(operatorAnswer, (response) => [response, path] as const)
      const prefixed = basePath === "" && /^\/[^?]+\/v1(\/|$)/.test(path)
      return Effect.succeed(
        [(prefixed ? ErrorAnswers.prefixUnknown : ErrorAnswers.notFound)(request.method, path), path] as const
      )
    }

    /** The answer with the headers every answer gets, counted and logged. */
    const finish = (
      request: ServerRequest,
      requestId: string,
      startedAt: number,
      arrivedAt: number,
      [response, route, rateLimitHeaders]: Routed
    ): Effect.Effect<ServerResponse> => {
      countRequest(route, response.status, (performance.now() - arrivedAt) / 1000)
      const answer: ServerResponse = {
        status: response.status,
        // `Object.assign`, not spreads: two spreads into one literal cost ~20 times as much.
        headers: Object.assign({}, response.headers, rateLimitHeaders, { "x-request-id": requestId }),
        body: response.body
      }
      if (!logRequests) return Effect.succeed(answer)
      return Effect.as(
        requestLog.record({
          requestId,
          method: request.method,
          path: splitUrl(request.url).path,
          route,
          status: response.status,
          ms: clock.unsafeCurrentTimeMillis() - startedAt,
          client: RateLimit.clientIp(request, hops),
          prefer: request.headers["prefer"]
        }),
        answer
      )
    }

    const handle = (request: ServerRequest): Effect.Effect<ServerResponse> => {
      const requestId = crypto.randomUUID()
      // The latency histogram measures wall time, whatever clock the app runs on (a monotonic
      // reading, no allocation).
      const arrivedAt = performance.now()
      const startedAt = logRequests ? clock.unsafeCurrentTimeMillis() : 0
      const routed = dispatch(request, requestId).pipe(
        Effect.catchAllCause((cause): Effect.Effect<Routed> =>
          Cause.isInterruptedOnly(cause)
            ? Effect.interrupt
            : Effect.logError("request failed", cause).pipe(
              Effect.annotateLogs("requestId", requestId),
              Effect.as([ErrorAnswers.internalError(requestId), request.url] as const)
            )
        )
      )
      if (!traced) return Effect.flatMap(routed, (done) => finish(request, requestId, startedAt, arrivedAt, done))
      return routed.pipe(
        Effect.tap(([response, route]) =>
          Effect.annotateCurrentSpan({ "http.route": route, "http.response.status_code": response.status })
        ),
        Effect.flatMap((done) => finish(request, requestId, startedAt, arrivedAt, done)),
        Effect.withSpan(`http ${request.method}`, {
          kind: "server",
          attributes: { "http.request.method": request.method, "appexec.request_id": requestId },
          // A caller's W3C `traceparent` makes the request a part of the caller's trace.
          parent: Option.getOrUndefined(TraceContext.parse(request.headers["traceparent"]))
        })
      )
    }

    return { handle, runtime, endStreams: streams.stop } satisfies ApiApp
  })

/**
 * The app for a host that does not use Effect: `layer` provides appexec (for example
 * `AppexecLayer.make()` over a storage). `dispose` stops the app and releases the layer. The
 * Node and web adapters build on it (`NodeListener.fromLayer` of `@appexec/platform-node`,
 * `WebHandler.fromLayer`).
 */
export const fromLayer = async <E>(
  layer: Layer.Layer<Requirements, E>,
  options: Options = {}
): Promise<{ readonly app: App; readonly dispose: () => Promise<void> }> => {
  const runtime = ManagedRuntime.make(layer)
  const scope = await runtime.runPromise(Scope.make())
  const app = await runtime.runPromise(Scope.extend(make(options), scope))
  return {
    app,
    dispose: () => runtime.runPromise(Scope.close(scope, Exit.void)).then(() => runtime.dispose())
  }
}
