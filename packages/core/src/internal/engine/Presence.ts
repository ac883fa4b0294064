/**
 * The presence of a process in the registry of the deployment's processes (`ProcessRegistry`,
 * docs/operations.md#the-fleet): its row is written as the instance starts, beaten on every
 * `renewEvery` (the schedule of lease renewals, so a process is taken for dead when a lease of
 * its would have run out), and deleted as the instance stops. Each beat also prunes the rows of
 * processes dead for more than `PRUNE_AFTER_LEASES` leases (50 minutes at the default lease). A storage failure is logged and tried again at the
 * next beat: the row is a view, never a reason to stop.
 */
import { Clock, Effect, Fiber, Layer, Option } from "effect"
import { AppexecConfig, millis } from "../../AppexecConfig.js"
import { NodeRegistry } from "../../NodeRegistry.js"
import { ProcessIdentity } from "../../ProcessIdentity.js"
import { ProcessEntry, ProcessRegistry } from "../../ProcessRegistry.js"
import * as Routing from "../../Routing.js"

/** How many leases the row of a dead process stays, shown as lost, before a beat deletes it. */
export const PRUNE_AFTER_LEASES = 100

/** Writes, beats and deletes the row of this process for as long as the scope lasts. */
export const run = Effect.gen(function*() {
  const config = yield* AppexecConfig
  const identity = yield* ProcessIdentity
  const registry = yield* ProcessRegistry
  const leaseMs = millis(config.lease)
  const { name, processId, role, startedAt, version } = identity
  // What its worker runs, for the queued executions that wait for a worker (`Routing.waitingFor`).
  const registered = yield* Effect.serviceOption(NodeRegistry)
  const nodeTypes = role === "api" || Option.isNone(registered)
    ? null
    : Routing.runnable(registered.value.types, config.nodeTypes)

  const beat = Effect.gen(function*() {
    const at = yield* Clock.currentTimeMillis
    yield* registry.beat(
      new ProcessEntry({
        processId,
        name,
        role,
        version,
        startedAt,
        heartbeatAt: at,
        expiresAt: at + leaseMs,
        ...(nodeTypes === null ? {} : { nodeTypes })
      })
    )
    yield* registry.prune(at - PRUNE_AFTER_LEASES * leaseMs)
  }).pipe(Effect.catchTag("StorageError", (error) => Effect.logWarning("process heartbeat failed", error)))

  yield* beat
  const beating = yield* Effect.forkScoped(Effect.forever(Effect.zipRight(Effect.sleep(config.renewEvery), beat)))
  // The beats end first: none may write the row again once it is deleted.
  yield* Effect.addFinalizer(() =>
    Fiber.interrupt(beating).pipe(
      Effect.zipRight(registry.remove(processId)),
      Effect.catchTag("StorageError", (error) => Effect.logWarning("the process row could not be deleted", error))
    )
  )
  yield* Effect.logDebug(`process ${processId} (${role}) started`)
})

/** The presence of this process as a layer. */
export const layer = Layer.scopedDiscard(run)
