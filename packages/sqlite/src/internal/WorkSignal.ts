/**
 * The in-process wake-up of idle workers: an insert or a release notifies, `awaitWork` waits.
 * Work written by other processes is found by the worker's poll interval instead.
 */
import { Context, Effect, Layer, Queue } from "effect"

/** A signal that work may have become claimable in this process. */
export class WorkSignal extends Context.Tag("@appexec/sqlite/WorkSignal")<
  WorkSignal,
  {
    /** Wakes one waiter (or the next one to wait). */
    readonly notify: Effect.Effect<void>
    /** Completes at the next notification, or at once if one is pending. */
    readonly wait: Effect.Effect<void>
  }
>() {
  /** A fresh signal: at most one pending notification is kept. */
  static readonly layer = Layer.effect(
    WorkSignal,
    Effect.map(Queue.sliding<void>(1), (queue) => ({
      // Every insert notifies: one synchronous step (a sliding queue never waits).
      notify: Effect.sync(() => {
        queue.unsafeOffer(undefined)
      }),
      wait: Queue.take(queue)
    }))
  )
}
