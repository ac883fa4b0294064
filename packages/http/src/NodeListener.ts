/**
 * appexec as a Node `(req, res)` listener, to mount on a host's own `http.Server` (under a base
 * path if the host likes: `{ basePath: "/api" }`).
 */
import { NodeHttpServer } from "@effect/platform-node"
import { Effect, Exit, type Layer, ManagedRuntime, Scope } from "effect"
import { createServer, type IncomingMessage, type ServerResponse } from "node:http"
import type { AddressInfo } from "node:net"
import * as AppexecHttp from "./AppexecHttp.js"

/** A Node request listener. */
export type Listener = (request: IncomingMessage, response: ServerResponse) => void

/** The listener, inside an Effect program that provides appexec; it serves while the scope is open. */
export const make = (
  options: AppexecHttp.Options = {}
): Effect.Effect<Listener, never, AppexecHttp.Requirements | Scope.Scope> =>
  Effect.flatMap(AppexecHttp.make(options), (app) => NodeHttpServer.makeHandler(app))

/** Where `serve` listens: port 0 (any free port) on 127.0.0.1 unless told otherwise. */
export interface ServeOptions extends AppexecHttp.Options {
  readonly port?: number
  readonly host?: string
}

/**
 * appexec alone on a Node `http.Server` of its own, listening until the scope closes (then open
 * connections are closed too); the base URL it answers at.
 *
 * ```ts
 * const { url } = yield* NodeListener.serve({ port: 8080 })
 * ```
 */
export const serve = (
  options: ServeOptions = {}
): Effect.Effect<{ readonly url: string }, never, AppexecHttp.Requirements | Scope.Scope> =>
  Effect.gen(function* () {
    const { port = 0, host = "127.0.0.1", ...http } = options
    const listener = yield* make(http)
    const server = yield* Effect.acquireRelease(Effect.sync(() => createServer(listener)), (server) =>
      Effect.async<void>((resume) => {
        server.closeAllConnections()
        server.close(() => resume(Effect.void))
      })
    )
    const bound = yield* Effect.async<number>((resume) => {
      server.listen(port, host, () => resume(Effect.succeed((server.address() as AddressInfo).port)))
    })
    return { url: `http://${host.includes(":") ? `[${host}]` : host}:${bound}` }
  })

/**
 * The listener for a host that does not use Effect: `layer` provides appexec (for example
 * `AppexecLayer.make()` over a storage, with `SigningKeys`). `dispose` stops it and releases the layer.
 */
export const fromLayer = async <E>(
  layer: Layer.Layer<AppexecHttp.Requirements, E>,
  options: AppexecHttp.Options = {}
): Promise<{ readonly listener: Listener; readonly dispose: () => Promise<void> }> => {
  const runtime = ManagedRuntime.make(layer)
  const scope = await runtime.runPromise(Scope.make())
  const listener = await runtime.runPromise(Scope.extend(make(options), scope))
  return {
    listener,
    dispose: () => runtime.runPromise(Scope.close(scope, Exit.void)).then(() => runtime.dispose())
  }
}
