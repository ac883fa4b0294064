/**
 * A store's revision (a number that every relevant write moves, such as the key revision that
 * every revocation moves), read as a memo shared by the calls around it, for caches that stay
 * valid while it stays put: core's key cache (`KeyStore.keyRevision`), PostgreSQL's app cache.
 *
 * Every call of a turn of the event loop (the requests its I/O callbacks hand over) takes the
 * first read made in it, and the next turn reads again. `invalidate` forgets the read at once
 * (after a write through this process), so the very next call reads the moved revision; a write
 * by another process is seen by the first read of a turn that begins after it committed.
 *
 * A read is kept only if it began and ended in the same turn, with no invalidation in between: a
 * store that answers at once (SQLite, memory) is read once a turn, without a suspension. A read
 * that spans turns (a store over a network) is not kept; for such reads one rule holds: a call
 * takes the value of a read that STARTED after the call began, never of a read already under way
 * (that read may have seen the store before a write that committed before the call began). A
 * call that finds no read under way reads itself; calls made while a read is under way wait for
 * the next one, which starts (in a fiber of the memo's scope, so that an interrupted caller
 * leaves no one waiting) as soon as that read ends and serves all of them. Reads never overlap,
 * so a later read never answers an older value than an earlier one did. When the scope closes,
 * the calls still waiting end interrupted, and so does every later call that would wait.
 */
import { Deferred, Effect, type Exit, FiberId, type Scope } from "effect"
import { atTurnEnd } from "./internal/NextTurn.js"

/** Reads of a revision as a memo: `get` answers this turn's read, or one that started after it was called. */
export interface RevisionMemo<A, E> {
  /** The revision, read in this turn (and shared with the calls around it). */
  readonly get: Effect.Effect<A, E>
  /** Forgets this turn's read: the next call reads again (after a write through this process). */
  readonly invalidate: Effect.Effect<void>
}

/** The memo over `read`, its reads for waiting calls forked in the current scope. */
export const make = <A, E>(read: Effect.Effect<A, E>): Effect.Effect<RevisionMemo<A, E>, never, Scope.Scope> =>
  Effect.gen(function*() {
    const scope = yield* Effect.scope
    /** The calls waiting for a read that has not started yet: they all take its value. */
    let waiting: Deferred.Deferred<A, E> | undefined
    /** Whether a read is under way: a caller's own, or the reader fiber's for `waiting`. */
    let reading = false
    /** Whether the value of this turn's read is kept in `current`. */
    let kept = false
    /** The revision read in this turn, taken by every call until the turn ends. */
    let current: A | undefined
    /** Moves when a turn ends and on `invalidate`: a read that saw it move is not kept. */
    let epoch = 0
    /** Whether the end of this turn is awaited already. */
    let turnEndAwaited = false
    /** Set when the scope closed: no call waits any more. */
    let closed = false
    const forget = () => {
      kept = false
      current = undefined
      epoch += 1
    }
    const endTurn = () => {
      turnEndAwaited = false
      forget()
    }
    yield* Effect.addFinalizer(() =>
      Effect.suspend(() => {
        closed = true
        const batch = waiting
        waiting = undefined
        return batch === undefined ? Effect.void : Deferred.interrupt(batch)
      })
    )

    /** `read`, its value kept for the rest of the turn when the turn (and no invalidation) ended meanwhile. */
    const readForTurn = Effect.suspend(() => {
      const began = epoch
      if (!turnEndAwaited) {
        turnEndAwaited = true
        atTurnEnd(endTurn)
      }
      return Effect.tap(read, (revision) => {
        if (epoch === began) {
          kept = true
          current = revision
        }
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
        (exit: Exit.Exit<A, E>) => Effect.zipRight(Deferred.done(batch, exit), reader)
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
        if (waiting === undefined || closed) return Effect.void
        reading = true
        return startReader
      })
    )

    const get: Effect.Effect<A, E> = Effect.suspend(() => {
      if (kept) return Effect.succeed(current!)
      if (!reading) {
        reading = true
        return lead
      }
      if (closed) return Effect.interrupt
      let batch = waiting
      if (batch === undefined) {
        batch = Deferred.unsafeMake<A, E>(FiberId.none)
        waiting = batch
      }
      return Deferred.await(batch)
    })

    return { get, invalidate: Effect.sync(forget) }
  })
