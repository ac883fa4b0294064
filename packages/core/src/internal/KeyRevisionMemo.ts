/**
 * One read of the store's key revision shared by the authentications that happen together: a
 * burst of requests (the requests of one event-loop turn, say) reads it once, not once each.
 *
 * The revocation guarantee rests on one rule: a call takes the value of a read that STARTED after
 * the call began, never of a read already under way (that read may have seen the store before a
 * revocation that committed before the call began). A call that finds no read under way reads
 * itself; calls made while a read is under way wait for the next one, which starts (in a fiber
 * of the facade, so that an interrupted caller leaves no one waiting) as soon as that read ends
 * and serves all of them. Reads never overlap, so a later read never answers an older value than
 * an earlier one did. A store that answers at once is read by each call, without a suspension.
 */
import { Deferred, Effect, type Exit, FiberId, type Scope } from "effect"
import type { StorageError } from "../Errors.js"

/** Reads of the key revision as a memo: `get` answers a read that started after it was called. */
export interface KeyRevisionMemo {
  /** The store's key revision, read after this call began (and shared with the calls around it). */
  readonly get: Effect.Effect<number, StorageError>
}

/** The memo over `read`, its reads forked in the current scope. */
export const make = (read: Effect.Effect<number, StorageError>): Effect.Effect<KeyRevisionMemo, never, Scope.Scope> =>
  Effect.gen(function*() {
    const scope = yield* Effect.scope
    /** The calls waiting for a read that has not started yet: they all take its value. */
    let waiting: Deferred.Deferred<number, StorageError> | undefined
    /** Whether a read is under way: a caller's own, or the reader fiber's for `waiting`. */
    let reading = false

    // Reads for each batch of waiting calls in turn, until none waits.
    const reader: Effect.Effect<void> = Effect.suspend(() => {
      const batch = waiting
      if (batch === undefined) {
        reading = false
        return Effect.void
      }
      // From here on, a new call waits for the next read: this one has started.
      waiting = undefined
      return Effect.flatMap(
        Effect.exit(read).pipe(Effect.onInterrupt(() => Deferred.interrupt(batch))),
        (exit: Exit.Exit<number, StorageError>) => Effect.zipRight(Deferred.done(batch, exit), reader)
      )
    })
    const startReader = Effect.asVoid(Effect.forkIn(reader, scope))

    /**
     * A call that finds no read under way reads itself, in its own fiber: a store that answers at
     * once (SQLite, memory) costs no suspension. Calls made while that read is under way wait for
     * the next read, which starts when it ends.
     */
    const lead = Effect.ensuring(
      read,
      Effect.suspend(() => {
        reading = false
        if (waiting === undefined) return Effect.void
        reading = true
        return startReader
      })
    )

    const get: Effect.Effect<number, StorageError> = Effect.suspend(() => {
      if (!reading) {
        reading = true
        return lead
      }
      let batch = waiting
      if (batch === undefined) {
        batch = Deferred.unsafeMake<number, StorageError>(FiberId.none)
        waiting = batch
      }
      return Deferred.await(batch)
    })
    return { get }
  })
