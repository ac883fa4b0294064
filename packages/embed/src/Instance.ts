/**
 * `createAppexec`: one running appexec instance for a Node host that works with Promises. It is
 * the Effect API assembled once — `AppexecLayer.make` over the chosen storage, the HTTP app of
 * `@appexec/http` for its `handler` (`NodeListener`) and `fetch` (`WebHandler`), the host's
 * logger in place of Effect's — on one `ManagedRuntime`, which every method runs on and
 * `close()` disposes. Failures reach the host as `AppexecError`s.
 *
 * ```js
 * const appexec = await createAppexec({ basePath: "/appexec" })
 * app.use("/appexec", appexec.handler)
 * const done = await appexec.as({ workspace: "acme" }).executions.run(appId, { who: "Ada" })
 * process.once("SIGTERM", () => appexec.close())
 * ```
 */
import * as Core from "@appexec/core/Appexec"
import * as AppexecLayer from "@appexec/core/AppexecLayer"
import * as IdGenerator from "@appexec/core/IdGenerator"
import type * as NodeType from "@appexec/core/NodeType"
import * as AppexecHttp from "@appexec/http/AppexecHttp"
import * as WebHandler from "@appexec/http/WebHandler"
import * as NodeListener from "@appexec/platform-node/NodeListener"
import * as NodeOutboundHttp from "@appexec/platform-node/NodeOutboundHttp"
import { Context, Effect, Exit, Layer, ManagedRuntime } from "effect"
import { hostname } from "node:os"
import { fromCause } from "./AppexecError.js"
import * as EmbedOptions from "./EmbedOptions.js"
import * as EmbedStorage from "./EmbedStorage.js"
import * as HostLogger from "./HostLogger.js"
import * as Runner from "./internal/Runner.js"
import * as Operator from "./Operator.js"
import * as Workspace from "./Workspace.js"

/** The version of appexec an embedded instance says it runs (the operator views). */
const EMBED_VERSION = "0.1.0"

/** A running instance. Its `apps` and `executions` act as its default workspace. */
export interface Appexec extends Workspace.Workspace {
  /**
   * The HTTP API as a Node `(req, res)` listener, to mount under `basePath`: `app.use("/appexec",
   * appexec.handler)` (Express), or called from any server's request handler.
   */
  readonly handler: NodeListener.Listener
  /** The HTTP API as a web `Request → Response` handler (`clientAddress`: the caller's IP, for the rate limit). */
  readonly fetch: WebHandler.Handler
  /** The API keys clients of the mounted API present. */
  readonly keys: Operator.Keys
  /** The secrets node types read by name. */
  readonly secrets: Operator.Secrets
  /** The instance acting in-process as a workspace (made when missing), without an API key. */
  readonly as: (who: Workspace.ActAs) => Workspace.Workspace
  /**
   * Stops taking work, waits up to `drain` for running executions (then hands what still runs
   * back to the queue), closes the storage; resolves once all of it is done. Calls made after it
   * reject with code `closed`; requests are answered 503. Calling it again gives the same promise.
   */
  readonly close: () => Promise<void>
  /** The Effect runtime the instance runs on, for hosts that use Effect (`Appexec` of `@appexec/core` in it). */
  readonly runtime: ManagedRuntime.ManagedRuntime<AppexecLayer.Services, unknown>
}

/** The HTTP app of the instance, made with it and closed with it. */
class HttpApp extends Context.Tag("@appexec/embed/HttpApp")<HttpApp, AppexecHttp.App>() {}

const stopping = JSON.stringify({ error: { code: "internal_error", message: "The server is stopping." } })

/**
 * Creates and starts an instance (docs/embedding.md): opens (and migrates) its storage, starts its
 * worker, and resolves once it serves. Rejects with an `AppexecError` when it cannot start (a
 * `ConfigurationError` for a setting that cannot work, `storage_failed` for storage that cannot
 * be opened), having released what it had opened.
 */
export const createAppexec = async <
  const Nodes extends ReadonlyArray<NodeType.Any> = readonly [],
  S extends EmbedOptions.Services = Layer.Layer<never>
>(
  given?: EmbedOptions.Options<Nodes, S> & NoInfer<EmbedOptions.ServicesCheck<Nodes, S>>
): Promise<Appexec> => {
  const options: EmbedOptions.Options<Nodes, S> = given ?? {}
  const basePath = AppexecHttp.normalizeBasePath(options.basePath)
  const storage = await EmbedStorage.make(options.storage, {
    baseUrl: options.publicUrl ?? `http://localhost${basePath}`,
    masterKey: options.masterKey
  })
  const background = options.worker !== false
  const instance = AppexecLayer.make({
    nodes: options.nodes ?? [],
    config: {
      ...options.config,
      drainTimeout: options.drain ?? EmbedOptions.DEFAULT_DRAIN,
      masterKey: storage.masterKey
    },
    worker: background,
    webhooks: background,
    // A row in the registry of processes, and the owner of the worker's leases.
    process: { name: options.name ?? `${hostname()}:${process.pid}`, role: "embedded", version: EMBED_VERSION }
  })
  const http = Layer.scoped(
    HttpApp,
    AppexecHttp.make({
      basePath,
      console: options.console === true,
      operator: { docs: options.docs === true, health: options.health === true },
      logRequests: options.logRequests ?? true,
      ...(options.rateLimit === undefined ? {} : { rateLimit: options.rateLimit })
    })
  )
  const services: EmbedOptions.Services = options.services ?? Layer.empty
  const layer = http.pipe(
    Layer.provideMerge(instance),
    Layer.provideMerge(services),
    Layer.provideMerge(storage.layer),
    Layer.provide(IdGenerator.IdGenerator.random),
    Layer.provide(NodeOutboundHttp.layer({ allowPrivateNetworks: options.allowPrivateNetworks === true })),
    // Outermost, so that the fibers the instance starts as it is built log to the host too.
    Layer.provide(HostLogger.layer(options.logger ?? console, options.logLevel))
  )
  // What the node types need beyond the instance comes from `services`, as `ServicesCheck` holds
  // at the call; TypeScript cannot follow that through the generic `Nodes` here.
  const runtime = ManagedRuntime.make(layer as Layer.Layer<AppexecLayer.Services | HttpApp, unknown>)
  const started = await runtime.runPromiseExit(
    Effect.tap(HttpApp, () => Effect.logDebug(`appexec started on ${storage.where}`))
  )
  if (Exit.isFailure(started)) {
    await runtime.dispose()
    throw fromCause(started.cause)
  }
  const app = started.value
  const listener = NodeListener.fromApp(app)
  const web = WebHandler.fromApp(app)

  let closing: Promise<void> | undefined
  const isClosed = () => closing !== undefined
  const run = Runner.make(runtime, isClosed)

  const principals = new Map<string, Promise<Core.Principal>>()
  const principalOf = (who: Workspace.ActAs) => () => {
    const name = `${who.workspace}\u0000${who.user ?? ""}`
    let principal = principals.get(name)
    if (principal === undefined) {
      principal = run(Effect.flatMap(Core.Appexec, (appexec) => appexec.workspaces.principal(who)))
      // A failure is not kept: the next call tries again.
      principal.catch(() => principals.delete(name))
      principals.set(name, principal)
    }
    return principal
  }
  const as = (who: Workspace.ActAs) => Workspace.make(run, principalOf(who))
  const defaultWorkspace = options.workspace ?? EmbedOptions.DEFAULT_WORKSPACE
  const own = as({ workspace: defaultWorkspace })

  return {
    apps: own.apps,
    executions: own.executions,
    as,
    keys: Operator.keys(run, defaultWorkspace),
    secrets: Operator.secrets(run),
    handler: (request, response) => {
      if (!isClosed()) return listener(request, response)
      response.writeHead(503, { "content-type": "application/json", connection: "close" })
      response.end(stopping)
    },
    fetch: (request, info) =>
      isClosed()
        ? Promise.resolve(new Response(stopping, { status: 503, headers: { "content-type": "application/json" } }))
        : web(request, info),
    close: () =>
      closing ??= runtime.runPromise(Effect.flatMap(Core.Appexec, (appexec) => appexec.operator.drain)).then(
        () => runtime.dispose(),
        () => runtime.dispose()
      ),
    runtime
  }
}
