/**
 * Fibers forked from plain code with a runtime taken once: the worker's runs and the webhook
 * dispatcher's deliveries. Each fiber gets the log annotations of what it works on as it is made
 * (the parent's, and the given ones), not through `Effect.annotateLogs`, which copies the fiber
 * refs twice each time it is used.
 */
import { type Effect, type Fiber, FiberRef, FiberRefs, HashMap, Runtime } from "effect"

/** Forks an effect with these log annotations. */
export type Fork = <A, E>(
  effect: Effect.Effect<A, E>,
  annotations: Readonly<Record<string, unknown>>
) => Fiber.RuntimeFiber<A, E>

/** A fork over the services and fiber refs of `parent`. */
export const make = (parent: Runtime.Runtime<never>): Fork => {
  // The default flags, not the parent's: a layer is built uninterruptibly, and what is forked here
  // must be interruptible when its owner stops.
  const fork = Runtime.runFork(
    Runtime.make({
      context: parent.context,
      fiberRefs: parent.fiberRefs,
      runtimeFlags: Runtime.defaultRuntime.runtimeFlags
    })
  )
  const base = FiberRefs.getOrDefault(parent.fiberRefs, FiberRef.currentLogAnnotations)
  return (effect, annotations) => {
    let value = base
    for (const key in annotations) value = HashMap.set(value, key, annotations[key])
    return fork(effect, {
      updateRefs: (refs, fiberId) =>
        FiberRefs.updateAs(refs, { fiberId, fiberRef: FiberRef.currentLogAnnotations, value })
    })
  }
}
