/**
 * The admin app (docs/operations.md#metrics): Prometheus metrics at `GET /metrics` and
 * `GET /healthz`, for a listener of its own that only operators reach (`appexec serve
 * --admin-port`). Serve it with `NodeListener.fromApp` (`@appexec/platform-node`), or call
 * `handle` from a host's server.
 */
import { AppexecMetrics, ExecutionStore } from "@appexec/core"
import { Effect } from "effect"
import type * as AppexecHttp from "./AppexecHttp.js"
import * as ErrorAnswers from "./internal/ErrorAnswers.js"
import { json, type ServerRequest, type ServerResponse } from "./internal/Exchange.js"

/** The content type of the Prometheus text format. */
export const PROMETHEUS_CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"

/** The admin app over the execution store of the context (the gauges are read from it). */
export const make: Effect.Effect<AppexecHttp.App, never, ExecutionStore.ExecutionStore> = Effect.gen(function*() {
  const store = yield* ExecutionStore.ExecutionStore
  const runtime = yield* Effect.runtime<never>()
  const metrics = AppexecMetrics.prometheus.pipe(
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
    const route = path === "/metrics"
      ? metrics
      : path === "/healthz"
      ? Effect.succeed(json(200, { status: "ok" }))
      : undefined
    if (route === undefined) return Effect.succeed(ErrorAnswers.notFound(request.method, path))
    if (request.method !== "GET" && request.method !== "HEAD") {
      return Effect.succeed(ErrorAnswers.methodNotAllowed(request.method, path, ["GET", "HEAD"]))
    }
    return route
  }
  return { handle, runtime }
})
