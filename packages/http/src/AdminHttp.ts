/**
 * The admin app (docs/operations.md#metrics): Prometheus metrics at `GET /metrics`, liveness at
 * `GET /healthz` and readiness at `GET /readyz` (the main port's, `OperatorRoutes`: 503 while
 * storage does not answer or the instance stops), for a listener of its own that only operators
 * reach (`appexec serve --admin-port`, `appexec worker --admin-port`). Serve it with `NodeListener.fromApp` (`@appexec/platform-node`), or call
 * `handle` from a host's server.
 *
 * `withOperator` adds the operator views (docs/operations.md#operator-views): their JSON
 * endpoints under `/operator` and the console in its operator mode at `/console` (where `GET /`
 * then leads), with no key: the port is private. Read-only unless `actions` is given; an action is
 * then taken only from the port's own page, with the anti-forgery token that page reads from
 * `GET /operator` (`internal/ActionGuard.ts`). They answer only requests sent to the admin port's
 * own address, a loopback name or a name the operator allowed (`Host`), so that a page of another
 * site cannot read them by DNS rebinding.
 */
import { type Appexec, AppexecMetrics, ExecutionStore } from "@appexec/core"
import { Effect } from "effect"
import type * as AppexecHttp from "./AppexecHttp.js"
import * as ConsoleRoute from "./ConsoleRoute.js"
import * as ActionGuard from "./internal/ActionGuard.js"
import * as AdminHost from "./internal/AdminHost.js"
import * as ErrorAnswers from "./internal/ErrorAnswers.js"
import { json, type ServerRequest, type ServerResponse } from "./internal/Exchange.js"
import * as OperatorApi from "./internal/OperatorApi.js"
import * as OperatorRoutes from "./OperatorRoutes.js"

/** The content type of the Prometheus text format. */
export const PROMETHEUS_CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"

/** What the metrics of an admin app show. */
export interface MetricsOptions {
  /**
   * Export the gauges read from the database (`scope="database"`: queue depth, running, oldest
   * queued age), the same numbers in every process on the database: on for the API processes,
   * off for workers, so that a sum over a fleet does not count them once per worker (default true).
   */
  readonly databaseGauges?: boolean | undefined
}

/** The admin app over the instance of the context (the database's gauges are read from its execution store). */
export const make: Effect.Effect<AppexecHttp.App, never, ExecutionStore.ExecutionStore | Appexec.Appexec> = Effect
  .suspend(() => build(undefined, {}))

/** The admin app with `options` for its metrics (`appexec worker`: without the database's gauges). */
export const makeWith = (
  options: MetricsOptions
): Effect.Effect<AppexecHttp.App, never, ExecutionStore.ExecutionStore | Appexec.Appexec> => build(undefined, options)

/** What the operator views of `withOperator` may do, and what its metrics show. */
export interface OperatorOptions extends MetricsOptions {
  /**
   * Allow the operator's actions (a webhook's redelivery), from the views' own page with its
   * anti-forgery token; without it they answer 403 (default false).
   */
  readonly actions?: boolean | undefined
  /** Serve the console's operator mode at `/console` (default true). */
  readonly console?: boolean | undefined
  /**
   * The address and port the admin listener is bound to, read at each request (a port 0 is known
   * only once listening). The views answer a `Host` of that address, `localhost`, `127.0.0.1` or
   * `[::1]` with that port (any IP address when the address is a wildcard); absent or not yet
   * known: the loopback names with any port.
   */
  readonly bound?: (() => AdminHost.Bound | undefined) | undefined
  /** More `Host` names the views answer (`name` with any port, or `name:port`), e.g. behind a proxy. */
  readonly allowedHosts?: ReadonlyArray<string> | undefined
}

/** The address and port an admin listener is bound to, for `OperatorOptions.bound`. */
export type Bound = AdminHost.Bound

/** The admin app with the operator views, over the instance of the context. */
export const withOperator = (
  options: OperatorOptions = {}
): Effect.Effect<AppexecHttp.App, never, OperatorApi.Requirements> =>
  Effect.gen(function*() {
    const api = yield* OperatorApi.make({ actions: options.actions ?? false, guard: yield* ActionGuard.make })
    const console = options.console ?? true ? yield* ConsoleRoute.make("", "operator") : undefined
    const allowed = AdminHost.allowedSet(options.allowedHosts ?? [])
    const bound = options.bound ?? (() => undefined)
    return yield* build(
      { api, console, hostAllowed: (host) => AdminHost.allows(host, bound(), allowed) },
      options
    )
  })

const build = (
  operator: {
    readonly api: OperatorApi.Lookup
    readonly console: ConsoleRoute.Route | undefined
    readonly hostAllowed: (host: string | undefined) => boolean
  } | undefined,
  options: MetricsOptions
): Effect.Effect<AppexecHttp.App, never, ExecutionStore.ExecutionStore | Appexec.Appexec> =>
  Effect.gen(function*() {
    const store = yield* ExecutionStore.ExecutionStore
    const health = yield* OperatorRoutes.make("", "/", { health: true })
    const runtime = yield* Effect.runtime<never>()
    const metrics = AppexecMetrics.prometheusOf({ database: options.databaseGauges ?? true }).pipe(
      Effect.provideService(ExecutionStore.ExecutionStore, store),
      Effect.map((text): ServerResponse => ({
        status: 200,
        headers: { "content-type": PROMETHEUS_CONTENT_TYPE, "cache-control": "no-store" },
        body: text
      })),
      Effect.catchAll((error) =>
        Effect.logError("metrics: storage failed", error).pipe(
          Effect.as(json(503, { error: { code: "internal_error", message: "Storage did not answer." } }))
        )
      )
    )
    const handle = (request: ServerRequest): Effect.Effect<ServerResponse> => {
      const q = request.url.indexOf("?")
      const path = q === -1 ? request.url : request.url.slice(0, q)
      if (operator !== undefined && isOperatorPath(path, operator.console !== undefined)) {
        if (!operator.hostAllowed(request.headers.host)) return Effect.succeed(wrongHost(request.headers.host))
        if (isOperatorApiPath(path)) {
          return operator.api(request, path) ?? Effect.succeed(ErrorAnswers.notFound(request.method, path))
        }
        if (operator.console !== undefined && ConsoleRoute.isConsolePath(path)) {
          return Effect.succeed(operator.console(request.method, path, request.headers))
        }
        if (operator.console !== undefined && path === "/" && (request.method === "GET" || request.method === "HEAD")) {
          return Effect.succeed({
            status: 302,
            headers: { location: ConsoleRoute.PATH, "cache-control": "no-store" },
            body: ""
          })
        }
      }
      if (path !== "/metrics") {
        return health(request.method, path) ?? Effect.succeed(ErrorAnswers.notFound(request.method, path))
      }
      if (request.method !== "GET" && request.method !== "HEAD") {
        return Effect.succeed(ErrorAnswers.methodNotAllowed(request.method, path, ["GET", "HEAD"]))
      }
      return metrics
    }
    return { handle, runtime }
  })

/** Whether `path` is one of the operator views' API. */
const isOperatorApiPath = (path: string) => path === OperatorApi.PREFIX || path.startsWith(`${OperatorApi.PREFIX}/`)

/** Whether `path` is one of the operator views' (the console's only when it is served). */
const isOperatorPath = (path: string, console: boolean) =>
  isOperatorApiPath(path) || (console && (ConsoleRoute.isConsolePath(path) || path === "/"))

/** The answer to a request whose `Host` the operator views do not answer (a page of another site, by DNS rebinding). */
const wrongHost = (host: string | undefined) =>
  ErrorAnswers.fromInfo({
    code: "forbidden",
    message: `The operator views answer only at the admin port's own address, localhost, 127.0.0.1 or [::1]${
      host === undefined ? " (the request has no Host)" : ` (not at ${JSON.stringify(host.slice(0, 100))})`
    }; allow another name with allowedHosts (appexec serve: --admin-allowed-hosts).`
  })
