/**
 * The ComfyUI servers as the operator views show them (`BackendServers` of `@appexec/core`,
 * docs/operations.md#backend-servers): at each look, every server of the pool is asked whether it
 * answers (`GET /queue`, all at once, within `ComfyuiPool.PROBE_TIMEOUT`, through the guarded
 * outbound client and without the operator's secret: a proxy's 401 is an answer), which the pool
 * takes as news of its health (a server that gives no answer is down, one that answers is up);
 * the pool then says which servers are down, since when and why, and which executions of this
 * process hold each. The URLs are shown without credentials.
 */
import { BackendServers, type OutboundHttp } from "@appexec/core"
import { Effect, Layer } from "effect"
import { ComfyuiPool, PROBE_TIMEOUT } from "./ComfyuiPool.js"
import * as ComfyApi from "./internal/ComfyApi.js"

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
    const shown = (url: string, message: string) => message.replaceAll(url, BackendServers.shownUrl(url))
    const answers = (url: string) =>
      ComfyApi.probe({ url, timeout: PROBE_TIMEOUT, headers: {}, down: (error) => pool.markDown(url, error) }).pipe(
        Effect.tap(() => pool.markUp(url)),
        Effect.as(null),
        // A message never carries the URL's credentials.
        Effect.catchAll((failure) => Effect.succeed(shown(url, failure.message))),
        Effect.provide(context)
      )
    return BackendServers.BackendServers.of({
      list: Effect.gen(function*() {
        const errors = yield* Effect.forEach(pool.servers, answers, { concurrency: "unbounded" })
        const [held, down] = yield* Effect.all([pool.busy, pool.down])
        return pool.servers.map((url, i): BackendServers.BackendServer => {
          const executions = held.filter((h) => h.server === url).map((h) => h.executionId)
          const out = down.get(url)
          const error = out === undefined ? errors[i] ?? null : shown(url, out.error)
          return {
            kind: "comfyui",
            url: BackendServers.shownUrl(url),
            state: error !== null ? "unreachable" : executions.length > 0 ? "busy" : "idle",
            capacity: pool.capacityOf(url),
            executions,
            error,
            unreachableSince: out === undefined ? null : new Date(out.since).toISOString()
          }
        })
      })
    })
  })
)
