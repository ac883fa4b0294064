/**
 * How the Promise-facing parts run an effect of the instance: on its one runtime, the failure
 * turned into an `AppexecError`; refused once `close()` began.
 */
import type { Effect, ManagedRuntime } from "effect"
import { Exit } from "effect"
import type { AppexecError } from "../AppexecError.js"
import { closed, fromCause } from "../AppexecError.js"

/** Runs an effect that needs the services `R` of the instance, as a Promise. */
export type Run<R> = <A, E>(effect: Effect.Effect<A, E, R>) => Promise<A>

/** The runner over `runtime`; `isClosed` says whether `close()` began. */
export const make =
  <R>(runtime: ManagedRuntime.ManagedRuntime<R, unknown>, isClosed: () => boolean): Run<R> =>
  <A, E>(effect: Effect.Effect<A, E, R>): Promise<A> => {
    if (isClosed()) return Promise.reject(closed())
    return runtime.runPromiseExit(effect).then((exit) => {
      if (Exit.isSuccess(exit)) return exit.value
      const error: AppexecError = fromCause(exit.cause)
      throw error
    })
  }
