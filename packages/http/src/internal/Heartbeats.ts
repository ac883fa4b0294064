/**
 * The heartbeats of an app's open event streams (docs/api.md#live-executions) on one timer: a
 * stream that waits asks to be called once `every` has passed with nothing sent, and one fiber of
 * the app sleeps until the first such time, calls every stream that is due, and sleeps again.
 * When the app stops (its scope closes, or `stop` is run first: the process is about to close its
 * listener), every waiting stream is called with `stop`, and so is every one that asks
 * afterwards. So an idle stream holds a registration, not a fiber or a timer of its own.
 */
import { Duration, Effect, type Scope } from "effect"

/** Why a waiting stream is called. */
export type Reason = "beat" | "stop"

/** The heartbeats of one app. */
export interface Heartbeats {
  /**
   * Calls `callback` once: with `beat` once `every` has passed from now, or with `stop` when the
   * app stops (at once when it has). Answers the function that cancels it.
   */
  readonly after: (callback: (reason: Reason) => void) => () => void
  /** Calls every waiting stream with `stop`, and every later one at once; nothing happens a second time. */
  readonly stop: Effect.Effect<void>
}

/** Heartbeats every `every`, until the scope closes (then every waiter is stopped). */
export const make = (every: Duration.DurationInput): Effect.Effect<Heartbeats, never, Scope.Scope> =>
  Effect.gen(function*() {
    const clock = yield* Effect.clock
    const everyMs = Math.max(1, Duration.toMillis(Duration.decode(every)))
    /**
     * Waiting streams, each with when it is due (epoch ms). All wait the same time from when they
     * ask, so the order of insertion is the order of their due times: the first is the next due.
     */
    const waiting = new Map<(reason: Reason) => void, number>()
    let stopped = false
    /** Wakes the timer to look at the first due time again (it changed). */
    let replan: (() => void) | undefined
    const replanned = Effect.async<void>((resume) => {
      replan = () => resume(Effect.void)
      return Effect.sync(() => void (replan = undefined))
    })
    const lookAgain = () => {
      const wake = replan
      replan = undefined
      wake?.()
    }
    const step = Effect.suspend(() => {
      const now = clock.unsafeCurrentTimeMillis()
      for (const [callback, due] of waiting) {
        if (due > now) break
        waiting.delete(callback)
        callback("beat")
      }
      const next = waiting.values().next()
      return next.done === true ? replanned : Effect.race(Effect.sleep(next.value - now), replanned)
    })
    yield* Effect.forkScoped(Effect.forever(step))
    const stop = Effect.sync(() => {
      stopped = true
      const callbacks = [...waiting.keys()]
      waiting.clear()
      for (const callback of callbacks) callback("stop")
    })
    yield* Effect.addFinalizer(() => stop)
    return {
      stop,
      after: (callback) => {
        if (stopped) {
          callback("stop")
          return () => {}
        }
        // Each registration its own entry, even of the same function.
        const entry = (reason: Reason) => callback(reason)
        waiting.set(entry, clock.unsafeCurrentTimeMillis() + everyMs)
        if (waiting.size === 1) lookAgain()
        return () => {
          const first = waiting.keys().next()
          if (!waiting.delete(entry)) return
          if (first.done !== true && first.value === entry) lookAgain()
        }
      }
    }
  })
