/**
 * The ComfyUI servers of the instance as a pool inside one process: each server runs one prompt
 * of this process at a time (or as many as its capacity, `URL*N`), and a run waits here for a
 * free server rather than piling onto a server's own queue. A limit across processes (several workers sharing servers) is not kept
 * here: each process holds its own pool. Each run holds its server for an execution, so the
 * operator views can say which executions a server runs (`ComfyuiServers`).
 *
 * The pool also knows which servers are down (docs/nodes.md#providercomfyui): a server that gave
 * no answer (connection refused or reset, host not found, no answer in time) or a 5xx to
 * `/prompt` or `/queue` is marked down by whoever saw it, and logged once (WARN). A new run is
 * not given a down server while another could serve it. Each down server is probed in the
 * background (`GET /queue` through the guarded outbound client, within `PROBE_TIMEOUT`, first
 * after 1 s, then after 2, 4, 8, 16 and every 30 s: `probeSchedule`) until it answers, and is then
 * back in the pool, logged once (INFO). No probe runs while every server is up.
 */
import { BackendServers, type OutboundHttp } from "@appexec/core"
import {
  Clock,
  Context,
  Duration,
  Effect,
  FiberMap,
  FiberRef,
  HashMap,
  Layer,
  Schedule,
  type Scope,
  STM,
  TRef
} from "effect"
import { ComfyuiSettings, serverOf } from "./ComfyuiSettings.js"
import * as ComfyApi from "./internal/ComfyApi.js"

/** A run of this process on a server: the server and the execution it runs for. */
export interface Held {
  readonly server: string
  readonly executionId: string
}

/** A server that is down: since when (epoch ms) and why. */
export interface Down {
  readonly since: number
  readonly error: string
}

/** How long a server may take to answer a probe. */
export const PROBE_TIMEOUT = Duration.seconds(2)

/** The delays between a down server's probes after the first (1 s after it went down): 2 s doubling, at most 30 s. */
export const probeSchedule = Schedule.exponential(Duration.seconds(2)).pipe(
  Schedule.union(Schedule.spaced(Duration.seconds(30)))
)

/** The pool of ComfyUI servers. */
export class ComfyuiPool extends Context.Tag("@appexec/nodes-comfyui/ComfyuiPool")<ComfyuiPool, {
  /** The servers' root URLs (without their capacity), in the order configured. */
  readonly servers: ReadonlyArray<string>
  /** How many prompts of this process `server` runs at once. */
  readonly capacityOf: (server: string) => number
  /**
   * A free server of `among` (default: every one) that is not down, held for `executionId` until
   * the scope closes; waits while they are all busy or down.
   */
  readonly acquire: (executionId: string, among?: ReadonlyArray<string>) => Effect.Effect<string, never, Scope.Scope>
  /**
   * Holds `server` (one a run re-attaches to, down or not) for `executionId` until the scope
   * closes; waits while it is busy.
   */
  readonly hold: (server: string, executionId: string) => Effect.Effect<void, never, Scope.Scope>
  /** The runs of this process on the servers now, one per prompt, oldest first. */
  readonly busy: Effect.Effect<ReadonlyArray<Held>>
  /** The servers that are down now, by URL. */
  readonly down: Effect.Effect<ReadonlyMap<string, Down>>
  /** Marks `server` down because of `error` (nothing when it is down already) and probes it until it answers. */
  readonly markDown: (server: string, error: string) => Effect.Effect<void>
  /** Marks `server` up: it answered (nothing when it was not down). */
  readonly markUp: (server: string) => Effect.Effect<void>
  /** Waits until one of `servers` is not down. */
  readonly awaitUp: (servers: ReadonlyArray<string>) => Effect.Effect<void>
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
    const down = yield* TRef.make<ReadonlyMap<string, Down>>(new Map())
    const probes = yield* FiberMap.make<string>()
    const context = yield* Effect.context<OutboundHttp.OutboundHttp>()

    const take = (
      executionId: string,
      pick: (taken: ReadonlyArray<Held>, out: ReadonlyMap<string, Down>) => string | undefined
    ) =>
      Effect.acquireRelease(
        STM.commit(
          STM.zip(TRef.get(busy), TRef.get(down)).pipe(
            STM.flatMap(([taken, out]) => {
              const server = pick(taken, out)
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

    // Takes `server` out of the down ones, logged; its probe, if any, is left to end.
    const back = (server: string) =>
      Effect.gen(function*() {
        const was = yield* STM.commit(
          TRef.modify(down, (out) => {
            const entry = out.get(server)
            if (entry === undefined) return [entry, out] as const
            const rest = new Map(out)
            rest.delete(server)
            return [entry, rest] as const
          })
        )
        if (was === undefined) return
        yield* Effect.logInfo(
          `ComfyUI server ${BackendServers.shownUrl(server)} answers again (unreachable since ${
            new Date(was.since).toISOString()
          }): back in the pool`
        )
      })

    // The first probe 1 s after the server went down, then on `probeSchedule` until one answers;
    // its log lines are the pool's, not those of the run that saw the server go.
    const probe = (server: string) =>
      ComfyApi.probe({ url: server, timeout: PROBE_TIMEOUT, headers: {} }).pipe(
        Effect.provide(context),
        Effect.retry(probeSchedule),
        Effect.delay(Duration.seconds(1)),
        Effect.zipRight(back(server)),
        Effect.locally(FiberRef.currentLogAnnotations, HashMap.empty())
      )

    const markDown = (server: string, error: string) =>
      Effect.gen(function*() {
        const now = yield* Clock.currentTimeMillis
        const fresh = yield* STM.commit(
          TRef.modify(down, (out) =>
            out.has(server) || !capacity.has(server)
              ? [false, out] as const
              : [true, new Map(out).set(server, { since: now, error })] as const)
        )
        if (!fresh) return
        yield* Effect.logWarning(
          `ComfyUI server ${BackendServers.shownUrl(server)} is unreachable (${
            error.replaceAll(server, BackendServers.shownUrl(server))
          }): left out of the pool until it answers`
        )
        yield* FiberMap.run(probes, server, probe(server), { onlyIfMissing: true })
      })

    return ComfyuiPool.of({
      servers,
      capacityOf,
      acquire: (executionId, among = servers) =>
        take(executionId, (taken, out) => among.find((server) => !out.has(server) && !full(taken, server))),
      hold: (server, executionId) =>
        Effect.asVoid(take(executionId, (taken) => (full(taken, server) ? undefined : server))),
      busy: STM.commit(TRef.get(busy)),
      down: STM.commit(TRef.get(down)),
      markDown,
      markUp: (server) => Effect.zipRight(back(server), FiberMap.remove(probes, server)),
      awaitUp: (among) =>
        STM.commit(TRef.get(down).pipe(STM.flatMap((out) => among.some((s) => !out.has(s)) ? STM.void : STM.retry)))
    })
  })

/** The pool of the servers in `ComfyuiSettings`, its probes stopped with the layer. */
export const layer: Layer.Layer<ComfyuiPool, never, ComfyuiSettings | OutboundHttp.OutboundHttp> = Layer.scoped(
  ComfyuiPool,
  Effect.flatMap(ComfyuiSettings, (settings) => make(settings.servers))
)
