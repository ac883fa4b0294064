/**
 * One read of the store's key revision shared by the authentications that happen together: a
 * burst of requests (the requests of one event-loop turn, say) reads it once, not once each.
 *
 * The revocation guarantee rests on one rule: a call takes the value of a read that STARTED after
 * the call began, never of a read already under way (that read may have seen the store before a
 * revocation that committed before the call began). Calls that find no read under way start one
 * (in a fiber of the facade, so that an interrupted caller does not leave the others waiting);
 * calls made while a read is under way wait for the next one, which starts as soon as that read
 * ends and serves all of them. Reads never overlap, so a later read never answers an older value
 * than an earlier one did.
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
    /** Whether the reader fiber is under way (reading, or about to read for `waiting`). */
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

    const get: Effect.Effect<number, StorageError> = Effect.suspend(() => {
      let batch = waiting
      if (batch === undefined) {
        batch = Deferred.unsafeMake<number, StorageError>(FiberId.none)
        waiting = batch
      }
      if (reading) return Deferred.await(batch)
      reading = true
      // The reader starts on the scheduler, after the calls made in this same tick have joined.
      return Effect.zipRight(startReader, Deferred.await(batch))
    })
    return { get }
  })
