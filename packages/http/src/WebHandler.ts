/**
 * appexec as a web-standard `Request → Response` handler (for `Deno.serve`, Bun, service workers,
 * or any framework that speaks `fetch`), mountable under a base path.
 */
import { HttpApp, HttpServerRequest } from "@effect/platform"
import { Context, Effect, Exit, type Layer, ManagedRuntime, Option, Scope } from "effect"
import * as AppexecHttp from "./AppexecHttp.js"

/** A web handler. `clientAddress` is the caller's IP, which a web `Request` does not carry. */
export type Handler = (request: Request, info?: { readonly clientAddress?: string }) => Promise<Response>

/** The caller's address, handed in by the host with each request. */
class ClientAddress extends Context.Tag("@appexec/http/WebHandler/ClientAddress")<ClientAddress, string>() {}

/** The handler, inside an Effect program that provides appexec; it serves while the scope is open. */
export const make = (
  options: AppexecHttp.Options = {}
): Effect.Effect<Handler, never, AppexecHttp.Requirements | Scope.Scope> =>
  Effect.gen(function* () {
    const app = yield* AppexecHttp.make(options)
    const runtime = yield* Effect.runtime<never>()
    const withAddress = Effect.flatMap(Effect.serviceOption(ClientAddress), (address) =>
      Option.isNone(address)
        ? app
        : Effect.updateService(app, HttpServerRequest.HttpServerRequest, (request) =>
            request.modify({ remoteAddress: address.value })
          )
    )
    const handler = HttpApp.toWebHandlerRuntime(runtime)(withAddress)
    return (request, info) =>
      handler(request, info?.clientAddress === undefined ? undefined : Context.make(ClientAddress, info.clientAddress))
  })

/**
 * The handler for a host that does not use Effect: `layer` provides appexec. `dispose` stops it
 * and releases the layer.
 */
export const fromLayer = async <E>(
  layer: Layer.Layer<AppexecHttp.Requirements, E>,
  options: AppexecHttp.Options = {}
): Promise<{ readonly handler: Handler; readonly dispose: () => Promise<void> }> => {
  const runtime = ManagedRuntime.make(layer)
  const scope = await runtime.runPromise(Scope.make())
  const handler = await runtime.runPromise(Scope.extend(make(options), scope))
  return {
    handler,
    dispose: () => runtime.runPromise(Scope.close(scope, Exit.void)).then(() => runtime.dispose())
  }
}
