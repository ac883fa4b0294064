/**
 * The cancel requests of executions running in this process: the worker registers each run it
 * starts with what stops it, and a cancel (from the facade in this process, or seen in the store
 * for a cancel made by another process) calls that, which interrupts the run where it runs.
 */
import type { ExecutionId } from "@appexec/api/Ids"
import { Context, Effect, Layer } from "effect"

/** The runs of this process that a cancel can stop, by execution id. */
export class Cancellations extends Context.Tag("@appexec/core/internal/Cancellations")<
  Cancellations,
  {
    /**
     * Registers what stops a run when its cancel is requested; the returned function unregisters
     * it. Synchronous: the worker calls it once per run, on its hot path.
     */
    readonly unsafeRegister: (executionId: ExecutionId, cancel: () => void) => () => void
    /** Requests the cancel of a run of this process; nothing when none runs here. */
    readonly signal: (executionId: ExecutionId) => Effect.Effect<void>
  }
>() {
  static readonly layer = Layer.sync(Cancellations, () => {
    const runs = new Map<ExecutionId, () => void>()
    return {
      unsafeRegister: (executionId, cancel) => {
        runs.set(executionId, cancel)
        return () => {
          if (runs.get(executionId) === cancel) runs.delete(executionId)
        }
      },
      signal: (executionId) => Effect.sync(() => runs.get(executionId)?.())
    }
  })
}

/** The message of an execution that was canceled. */
export const CANCELED_MESSAGE = "The execution was canceled."
