/**
 * The deterministic harness: a whole appexec instance on in-memory storage with seeded ids.
 * Run it under `@effect/vitest`'s `it.scoped`, whose `TestClock` makes every delay, lease and
 * timeout a matter of `TestClock.adjust`.
 */
import { Appexec, AppexecLayer, type NodeType, type OutboundHttp, Redactor } from "@appexec/core"
import { Effect, Layer, Logger, LogLevel } from "effect"
import * as MemoryStorage from "./MemoryStorage.js"
import * as SeededIds from "./SeededIds.js"
import * as TestOutboundHttp from "./TestOutboundHttp.js"

/** Options of the harness: those of `AppexecLayer.make`, the id seed and the outbound client. */
export interface Options<Nodes extends ReadonlyArray<NodeType.Any>> extends AppexecLayer.Options<Nodes> {
  readonly seed?: string
  /** The instance's outbound HTTP (default `TestOutboundHttp`: real requests, no address policy). */
  readonly outbound?: Layer.Layer<OutboundHttp.OutboundHttp>
  /** The least level its own fibers log (default `Warning`). */
  readonly logLevel?: LogLevel.LogLevel
}

/**
 * The instance on fresh in-memory storage; the storage ports stay reachable for assertions.
 * Its own fibers (the worker, the dispatcher) log warnings and errors only, unless `logLevel`
 * says otherwise. The webhook dispatcher is off unless `webhooks: true` is given, so that no test
 * sends a request it did not ask for. Stopping releases running executions at once
 * (`drainTimeout: 0`) unless the config says otherwise. Operator secrets (`SecretStore`) can be
 * set when the config gives a `masterKey`: they are never stored unsealed. The instance has a
 * redactor of its own (`Redactor.make()`), reachable for assertions, so that what one test
 * registers masks nothing in another.
 */
export const layer = <const Nodes extends ReadonlyArray<NodeType.Any> = readonly []>(
  options: Options<Nodes> = {}
) =>
  AppexecLayer.make({
    ...options,
    webhooks: options.webhooks ?? false,
    // Stopping does not wait for running executions: under TestClock nothing would end the wait.
    config: { drainTimeout: 0, ...options.config }
  }).pipe(
    Layer.provideMerge(MemoryStorage.layer),
    Layer.provideMerge(SeededIds.layer(options.seed)),
    Layer.provideMerge(options.outbound ?? TestOutboundHttp.layer),
    Layer.provideMerge(Layer.sync(Redactor.Redactor, Redactor.make)),
    Layer.provide(Logger.minimumLogLevel(options.logLevel ?? LogLevel.Warning))
  )

/** A principal of `workspace` (created on first use), with its API key. */
export const signIn = (workspace = "test", user = "tester") =>
  Effect.gen(function*() {
    const appexec = yield* Appexec.Appexec
    const created = yield* appexec.keys.create({ workspace, user })
    const principal = yield* appexec.keys.authenticate({ "x-api-key": created.key })
    return { ...principal, key: created.key }
  })
