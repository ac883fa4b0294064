/**
 * The cap on open event streams per API key (`AppexecConfig.maxStreamsPerKey`), counted in this
 * process: a stream takes a place when it is answered and gives it back when it ends, however it
 * ends (docs/api.md#live-executions).
 */
import { Effect, Option } from "effect"

/** The places of every key, at most `max` each. */
export interface StreamSlots {
  /** The most streams one key holds open. */
  readonly max: number
  /**
   * A place for one more stream of `keyId`, as the effect that gives it back (once: running it
   * again does nothing); none when the key holds `max` already.
   */
  readonly take: (keyId: string) => Effect.Effect<Option.Option<Effect.Effect<void>>>
}

/** No stream open yet, at most `max` per key. */
export const make = (max: number): StreamSlots => {
  const counts = new Map<string, number>()
  const giveBack = (keyId: string) => {
    const left = (counts.get(keyId) ?? 1) - 1
    if (left <= 0) counts.delete(keyId)
    else counts.set(keyId, left)
  }
  return {
    max,
    take: (keyId) =>
      Effect.sync(() => {
        const held = counts.get(keyId) ?? 0
        if (held >= max) return Option.none()
        counts.set(keyId, held + 1)
        let given = false
        return Option.some(Effect.sync(() => {
          if (given) return
          given = true
          giveBack(keyId)
        }))
      })
  }
}
