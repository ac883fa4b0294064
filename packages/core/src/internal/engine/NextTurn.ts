/**
 * The turns of the event loop, found without Node's types: `setImmediate`, where the runtime has
 * one (Node, Bun, Deno), runs after the I/O callbacks of this turn, without a timer's 1 ms. Core
 * compiles without any runtime's globals, so it is looked up on `globalThis`.
 */
import { Duration, Effect } from "effect"

/** Runs a function in the next turn; the function returned cancels it. None without `setImmediate`. */
const scheduleImmediate = ((): ((f: () => void) => () => void) | undefined => {
  const set: unknown = Reflect.get(globalThis, "setImmediate")
  const clear: unknown = Reflect.get(globalThis, "clearImmediate")
  if (typeof set !== "function" || typeof clear !== "function") return undefined
  return (f) => {
    const handle: unknown = set(f)
    return () => void clear(handle)
  }
})()

/** Resumes in a later turn of the event loop, after the I/O callbacks of this one. */
export const nextTurn: Effect.Effect<void> = scheduleImmediate === undefined
  ? Effect.sleep(Duration.zero)
  : Effect.async<void>((resume) => {
    const cancel = scheduleImmediate(() => resume(Effect.void))
    return Effect.sync(cancel)
  })

/**
 * Runs `f` when this turn of the event loop ends, never later: in the next turn, after this
 * one's I/O callbacks, where the runtime has `setImmediate`; else once the current task's
 * microtasks have run (a zero timer instead could let the callbacks of other tasks run first).
 */
export const atTurnEnd = (f: () => void): void => {
  if (scheduleImmediate === undefined) void Promise.resolve().then(f)
  else scheduleImmediate(f)
}
