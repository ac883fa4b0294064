/**
 * The ComfyUI servers of the instance as a pool inside one process: each server runs one prompt
 * of this process at a time (or as many as its capacity, `URL*N`), and a run waits here for a
 * free server rather than piling onto a server's own queue. A limit across processes (several workers sharing servers) is not kept
 * here: each process holds its own pool. Each run holds its server for an execution, so the
 * operator views can say which executions a server runs (`ComfyuiServers`).
 */
import { Context, Effect, Layer, type Scope, STM, TRef } from "effect"
import { ComfyuiSettings, serverOf } from "./ComfyuiSettings.js"

/** A run of this process on a server: the server and the execution it runs for. */
export interface Held {
  readonly server: string
  readonly executionId: string
}

/** The pool of ComfyUI servers. */
export class ComfyuiPool extends Context.Tag("@appexec/nodes-comfyui/ComfyuiPool")<ComfyuiPool, {
  /** The servers' root URLs (without their capacity), in the order configured. */
  readonly servers: ReadonlyArray<string>
  /** How many prompts of this process `server` runs at once. */
  readonly capacityOf: (server: string) => number
  /**
   * A free server of `among` (default: every one), held for `executionId` until the scope
   * closes; waits while they are all busy.
   */
  readonly acquire: (executionId: string, among?: ReadonlyArray<string>) => Effect.Effect<string, never, Scope.Scope>
  /** Holds `server` (one a run re-attaches to) for `executionId` until the scope closes; waits while it is busy. */
  readonly hold: (server: string, executionId: string) => Effect.Effect<void, never, Scope.Scope>
  /** The runs of this process on the servers now, one per prompt, oldest first. */
  readonly busy: Effect.Effect<ReadonlyArray<Held>>
}>() {}

/** The pool of `servers` (`URL` or `URL*N`), one prompt at a time on each unless its capacity says more. */
export const make = (specs: ReadonlyArray<string>) =>
  Effect.gen(function*() {
    const capacity = new Map(specs.map(serverOf).map((server) => [server.url, server.capacity]))
    const servers = [...capacity.keys()]
    const capacityOf = (server: string) => capacity.get(server) ?? 1
    const full = (taken: ReadonlyArray<Held>, server: string) =>
      taken.filter((held) => held.server === server).length >= capacityOf(server)
    const busy = yield* TRef.make<ReadonlyArray<Held>>([])
    const take = (executionId: string, pick: (taken: ReadonlyArray<Held>) => string | undefined) =>
      Effect.acquireRelease(
        STM.commit(
          TRef.get(busy).pipe(
            STM.flatMap((taken) => {
              const server = pick(taken)
              return server === undefined
                ? STM.retry
                : TRef.set(busy, [...taken, { server, executionId }]).pipe(STM.as(server))
            })
          )
        ),
        (server) =>
          STM.commit(TRef.update(busy, (taken) => {
            const at = taken.findIndex((held) => held.server === server && held.executionId === executionId)
            return at < 0 ? taken : [...taken.slice(0, at), ...taken.slice(at + 1)]
          }))
      )
    return ComfyuiPool.of({
      servers,
      capacityOf,
      acquire: (executionId, among = servers) =>
        take(executionId, (taken) => among.find((server) => !full(taken, server))),
      hold: (server, executionId) =>
        Effect.asVoid(take(executionId, (taken) => (full(taken, server) ? undefined : server))),
      busy: STM.commit(TRef.get(busy))
    })
  })

/** The pool of the servers in `ComfyuiSettings`. */
export const layer: Layer.Layer<ComfyuiPool, never, ComfyuiSettings> = Layer.effect(
  ComfyuiPool,
  Effect.flatMap(ComfyuiSettings, (settings) => make(settings.servers))
)
