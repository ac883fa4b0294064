/**
 * appexec as a Node `(req, res)` listener, to mount on a host's own `http.Server` (under a base
 * path if the host likes: `{ basePath: "/api" }`).
 */
import { NodeHttpServer } from "@effect/platform-node"
import { Effect, Exit, type Layer, ManagedRuntime, Scope } from "effect"
import type { IncomingMessage, ServerResponse } from "node:http"
import * as AppexecHttp from "./AppexecHttp.js"

/** A Node request listener. */
export type Listener = (request: IncomingMessage, response: ServerResponse) => void

/** The listener, inside an Effect program that provides appexec; it serves while the scope is open. */
export const make = (
  options: AppexecHttp.Options = {}
): Effect.Effect<Listener, never, AppexecHttp.Requirements | Scope.Scope> =>
  Effect.flatMap(AppexecHttp.make(options), (app) => NodeHttpServer.makeHandler(app))

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
