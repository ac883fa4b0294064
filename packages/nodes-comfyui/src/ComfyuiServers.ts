/**
 * The ComfyUI servers as the operator views show them (`BackendServers` of `@appexec/core`,
 * docs/operations.md#backend-servers): at each look, every server of the pool is asked whether it
 * answers (`GET /queue`, all at once, within `PROBE_TIMEOUT`, through the guarded outbound client
 * and without the operator's secret: a proxy's 401 is an answer), and the pool says which
 * executions of this process hold it. The URLs are shown without credentials.
 */
import { BackendServers, type OutboundHttp } from "@appexec/core"
import { Duration, Effect, Layer } from "effect"
import { ComfyuiPool } from "./ComfyuiPool.js"
import * as ComfyApi from "./internal/ComfyApi.js"

/** How long a server may take to answer a look of the operator views. */
export const PROBE_TIMEOUT = Duration.seconds(2)

/** The ComfyUI servers of the pool of the context, as the operator views show them. */
export const layer: Layer.Layer<
  BackendServers.BackendServers,
  never,
  ComfyuiPool | OutboundHttp.OutboundHttp
> = Layer.effect(
  BackendServers.BackendServers,
  Effect.gen(function*() {
    const pool = yield* ComfyuiPool
    const context = yield* Effect.context<OutboundHttp.OutboundHttp>()
    const answers = (url: string) =>
      ComfyApi.probe({ url, timeout: PROBE_TIMEOUT, headers: {} }).pipe(
        Effect.as(null),
        // A message never carries the URL's credentials.
        Effect.catchAll((failure) => Effect.succeed(failure.message.replaceAll(url, BackendServers.shownUrl(url)))),
        Effect.provide(context)
      )
    return BackendServers.BackendServers.of({
      list: Effect.gen(function*() {
        const [errors, held] = yield* Effect.all([
          Effect.forEach(pool.servers, answers, { concurrency: "unbounded" }),
          pool.busy
        ])
        return pool.servers.map((url, i): BackendServers.BackendServer => {
          const executions = held.filter((h) => h.server === url).map((h) => h.executionId)
          const error = errors[i] ?? null
          return {
            kind: "comfyui",
            url: BackendServers.shownUrl(url),
            state: error !== null ? "unreachable" : executions.length > 0 ? "busy" : "idle",
            capacity: pool.capacityOf(url),
            executions,
            error
          }
        })
      })
    })
  })
)
