/**
 * The cancel requests of executions running in this process: the worker registers each run it
 * starts, and a cancel (from the facade in this process, or seen in the store for a cancel made
 * by another process) completes the run's signal, which interrupts it where it runs.
 */
import type { ExecutionId } from "@appexec/api/Ids"
import { Context, Deferred, Effect, Layer, type Scope } from "effect"

/** Signals of the runs of this process, by execution id. */
export class Cancellations extends Context.Tag("@appexec/core/internal/Cancellations")<
  Cancellations,
  {
    /** The signal of a run: completes when its cancel is requested. Unregistered when the scope closes. */
    readonly register: (executionId: ExecutionId) => Effect.Effect<Deferred.Deferred<void>, never, Scope.Scope>
    /** Requests the cancel of a run of this process; nothing when none runs here. */
    readonly signal: (executionId: ExecutionId) => Effect.Effect<void>
    /** The executions running in this process. */
    readonly running: Effect.Effect<number>
  }
>() {
  static readonly layer = Layer.sync(Cancellations, () => {
    const runs = new Map<ExecutionId, Deferred.Deferred<void>>()
    return {
      register: (executionId) =>
        Effect.acquireRelease(
          Effect.tap(Deferred.make<void>(), (signal) => Effect.sync(() => runs.set(executionId, signal))),
          (signal) =>
            Effect.sync(() => {
              if (runs.get(executionId) === signal) runs.delete(executionId)
            })
        ),
      signal: (executionId) =>
        Effect.suspend(() => {
          const signal = runs.get(executionId)
          return signal === undefined ? Effect.void : Deferred.succeed(signal, undefined).pipe(Effect.asVoid)
        }),
      running: Effect.sync(() => runs.size)
    }
  })
}

/** The message of an execution that was canceled. */
export const CANCELED_MESSAGE = "The execution was canceled."
