/**
 * The store's key revision, read once per turn of the event loop: every authentication of a turn
 * (the requests its I/O callbacks hand over) takes the first read made in it, and the next turn
 * reads again. A revocation made through this process forgets the read at once (`invalidate`),
 * so the very next request reads the moved revision; one made by another process is seen by the
 * first read of a turn that begins after it committed.
 *
 * A read is kept only if it began and ended in the same turn, with no invalidation in between: a
 * store that answers at once (SQLite, memory) is read once a turn, without a suspension. A read
 * that spans turns (a store over a network) is not kept; for such reads one rule holds: a call
 * takes the value of a read that STARTED after the call began, never of a read already under way
 * (that read may have seen the store before a revocation that committed before the call began).
 * A call that finds no read under way reads itself; calls made while a read is under way wait
 * for the next one, which starts (in a fiber of the facade, so that an interrupted caller leaves
 * no one waiting) as soon as that read ends and serves all of them. Reads never overlap, so a
 * later read never answers an older value than an earlier one did.
 */
import { Deferred, Effect, type Exit, FiberId, type Scope } from "effect"
import type { StorageError } from "../Errors.js"
import { atTurnEnd } from "./NextTurn.js"

/** Reads of the key revision as a memo: `get` answers this turn's read, or one that started after it was called. */
export interface KeyRevisionMemo {
  /** The store's key revision, read in this turn (and shared with the calls around it). */
  readonly get: Effect.Effect<number, StorageError>
  /** Forgets this turn's read: the next call reads again (after a revocation in this process). */
  readonly invalidate: Effect.Effect<void>
}

/** The memo over `read`, its reads forked in the current scope. */
export const make = (read: Effect.Effect<number, StorageError>): Effect.Effect<KeyRevisionMemo, never, Scope.Scope> =>
  Effect.gen(function*() {
    const scope = yield* Effect.scope
    /** The calls waiting for a read that has not started yet: they all take its value. */
    let waiting: Deferred.Deferred<number, StorageError> | undefined
    /** Whether a read is under way: a caller's own, or the reader fiber's for `waiting`. */
    let reading = false
    /** The revision read in this turn, taken by every call until the turn ends. */
    let current: number | undefined
    /** Moves when a turn ends and on `invalidate`: a read that saw it move is not kept. */
    let epoch = 0
    /** Whether the end of this turn is awaited already. */
    let turnEndAwaited = false
    const endTurn = () => {
      turnEndAwaited = false
      current = undefined
      epoch += 1
    }

    /** `read`, its value kept for the rest of the turn when the turn (and no invalidation) ended meanwhile. */
    const readForTurn = Effect.suspend(() => {
      const began = epoch
      if (!turnEndAwaited) {
        turnEndAwaited = true
        atTurnEnd(endTurn)
      }
      return Effect.tap(read, (revision) => {
        if (epoch === began) current = revision
      })
    })

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
        Effect.exit(readForTurn).pipe(Effect.onInterrupt(() => Deferred.interrupt(batch))),
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
      readForTurn,
      Effect.suspend(() => {
        reading = false
        if (waiting === undefined) return Effect.void
        reading = true
        return startReader
      })
    )

    const get: Effect.Effect<number, StorageError> = Effect.suspend(() => {
      if (current !== undefined) return Effect.succeed(current)
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

    const invalidate = Effect.sync(() => {
      current = undefined
      epoch += 1
    })
    return { get, invalidate }
  })
