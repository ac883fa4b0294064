/**
 * The ComfyUI servers of the instance as a pool inside one process: each server runs one prompt
 * of this process at a time (or as many as its capacity, `URL*N`), and a run waits here for a
 * free server rather than piling onto a server's own queue. A limit across processes (several workers sharing servers) is not kept
 * here: each process holds its own pool.
 */
import { Context, Effect, Layer, type Scope, STM, TRef } from "effect"
import { ComfyuiSettings, serverOf } from "./ComfyuiSettings.js"

/** The pool of ComfyUI servers. */
export class ComfyuiPool extends Context.Tag("@appexec/nodes-comfyui/ComfyuiPool")<ComfyuiPool, {
  /** The servers' root URLs (without their capacity), in the order configured. */
  readonly servers: ReadonlyArray<string>
  /** A free server of `among` (default: every one), held until the scope closes; waits while they are all busy. */
  readonly acquire: (among?: ReadonlyArray<string>) => Effect.Effect<string, never, Scope.Scope>
  /** Holds `server` (one a run re-attaches to) until the scope closes; waits while it is busy. */
  readonly hold: (server: string) => Effect.Effect<void, never, Scope.Scope>
  /** The servers running a prompt of this process now, once per prompt. */
  readonly busy: Effect.Effect<ReadonlyArray<string>>
}>() {}

/** The pool of `servers` (`URL` or `URL*N`), one prompt at a time on each unless its capacity says more. */
export const make = (specs: ReadonlyArray<string>) =>
  Effect.gen(function*() {
    const capacity = new Map(specs.map(serverOf).map((server) => [server.url, server.capacity]))
    const servers = [...capacity.keys()]
    const full = (taken: ReadonlyArray<string>, server: string) =>
      taken.filter((s) => s === server).length >= (capacity.get(server) ?? 1)
    const busy = yield* TRef.make<ReadonlyArray<string>>([])
    const take = (pick: (taken: ReadonlyArray<string>) => string | undefined) =>
      Effect.acquireRelease(
        STM.commit(
          TRef.get(busy).pipe(
            STM.flatMap((taken) => {
              const server = pick(taken)
              return server === undefined
                ? STM.retry
                : TRef.set(busy, [...taken, server]).pipe(STM.as(server))
            })
          )
        ),
        (server) =>
          STM.commit(TRef.update(busy, (taken) => {
            const at = taken.indexOf(server)
            return at < 0 ? taken : [...taken.slice(0, at), ...taken.slice(at + 1)]
          }))
      )
    return ComfyuiPool.of({
      servers,
      acquire: (among = servers) => take((taken) => among.find((server) => !full(taken, server))),
      hold: (server) => Effect.asVoid(take((taken) => (full(taken, server) ? undefined : server))),
      busy: STM.commit(TRef.get(busy))
    })
  })

/** The pool of the servers in `ComfyuiSettings`. */
export const layer: Layer.Layer<ComfyuiPool, never, ComfyuiSettings> = Layer.effect(
  ComfyuiPool,
  Effect.flatMap(ComfyuiSettings, (settings) => make(settings.servers))
)
