/**
 * How an instance stops (docs/operations.md#stopping). From `begin` on it is stopping: readiness
 * answers "draining", and a run of its worker whose workflow fails is handed back rather than
 * failed, since the failure may be the stop's own doing (a child process killed with the whole
 * service, a connection cut as the host goes down): it runs again on the next start or on another
 * worker. The worker then drains for `drainTimeout`; `hurry` ends that wait at once, and what
 * still runs is handed back. A host calls `begin` as it starts to stop (`appexec.operator.drain`
 * does), and `hurry` when told twice (a second Ctrl-C); the worker begins it too as it stops.
 */
import { Context, Deferred, Effect, FiberId, Layer } from "effect"

/** The stop of an instance, shared by its facade, its worker and its host. */
export class Shutdown extends Context.Tag("@appexec/core/Shutdown")<
  Shutdown,
  {
    /** Marks the instance as stopping; nothing happens a second time. */
    readonly begin: Effect.Effect<void>
    /** Whether the instance is stopping. Synchronous: the worker asks as a run ends. */
    readonly unsafeStopping: () => boolean
    /**
     * Ends the worker's drain at once (and marks the instance as stopping): what still runs is
     * handed back now. Synchronous, for a signal handler; nothing happens a second time.
     */
    readonly unsafeHurry: () => void
    /** Completes once `unsafeHurry` was called. */
    readonly hurried: Effect.Effect<void>
  }
>() {
  /** A fresh stop: not stopping, not hurried. */
  static readonly layer = Layer.sync(Shutdown, () => {
    let stopping = false
    const hurry = Deferred.unsafeMake<void>(FiberId.none)
    return {
      begin: Effect.sync(() => {
        stopping = true
      }),
      unsafeStopping: () => stopping,
      unsafeHurry: () => {
        stopping = true
        Deferred.unsafeDone(hurry, Effect.void)
      },
      hurried: Deferred.await(hurry)
    }
  })
}
