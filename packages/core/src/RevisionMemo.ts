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
 *
 * Within a request (`withinRequest`: the HTTP layer wraps each `/v1` request in it as it arrives)
 * the rule is the same with the request in place of the call: a call may take any read that
 * began after its request began, not only one that began after the call. So the calls of one
 * request share one read (its key's, then its app's: one read of the revisions, not two in a
 * row), and a call joins a read under way that began after its request did; what was written
 * before the request began is still seen by every call of it. A write through this process
 * (`invalidate`) still makes the next call read again.
 */
import { Cause, Deferred, Effect, FiberId, FiberRef } from "effect"
import { globalValue } from "effect/GlobalValue"
import type * as Scope from "effect/Scope"
import { atTurnEnd } from "./internal/engine/NextTurn.js"

/**
 * The order in which requests and reads began, across every memo: a read that began after a
 * request did has a larger number than the request.
 */
const sequence = globalValue(Symbol.for("@appexec/core/RevisionMemo/sequence"), () => ({ next: 0 }))

/** When the request of the current fiber began (see `withinRequest`); none: +Infinity. */
const requestBegan = globalValue(
  Symbol.for("@appexec/core/RevisionMemo/requestBegan"),
  () => FiberRef.unsafeMake(Number.POSITIVE_INFINITY)
)

/**
 * Runs `effect` as one request beginning now: its calls of every memo may take a read that began
 * after this moment, such as the one an earlier call of the same request made.
 */
export const withinRequest = <A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
  // Set and set back by hand rather than by `Effect.locally`, whose acquire/release costs a
  // polling request a tenth of its time; an interruption ends the request's fiber anyway.
  Effect.flatMap(Effect.suspend(() => FiberRef.getAndSet(requestBegan, ++sequence.next)), (outer) =>
    Effect.matchCauseEffect(effect, {
      onFailure: (cause) =>
        Effect.zipRight(FiberRef.set(requestBegan, outer), Effect.failCause(cause)),
      onSuccess: (value) => Effect.as(FiberRef.set(requestBegan, outer), value)
    }))

/** Reads of a revision as a memo: `get` answers this turn's read, or one that started after it was called. */
export interface RevisionMemo<A, E> {
  /** The revision, read in this turn (and shared with the calls around it). */
  readonly get: Effect.Effect<A, E>
  /** Forgets this turn's read: the next call reads again (after a write through this process). */
  readonly invalidate: Effect.Effect<void>
  /**
   * A read of the revision made by another statement (one that reads it beside its own work),
   * which began at `began` (`RevisionMemo.begin()`, taken just before the statement was sent):
   * kept as the newest read for the requests that began before it, unless a newer read, or a
   * write through this process, came since.
   */
  readonly offer: (began: number, revision: A) => void
}

/** The moment a statement that reads a revision beside its own work begins, for `offer`. */
export const begin = (): number => ++sequence.next

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
    /** The newest read that ended well, when it began (0: none a request may take), and its value. */
    let lastBegan = 0
    let last: A | undefined
    /** The read under way, when it began (0: none a request may join), and its end. */
    let underwayBegan = 0
    let underway: Deferred.Deferred<A, E> | undefined
    const forget = () => {
      kept = false
      current = undefined
      epoch += 1
    }
    /** When the last write through this process was made: no read that began before is taken. */
    let invalidatedAt = 0
    const invalidate = () => {
      forget()
      lastBegan = 0
      last = undefined
      underwayBegan = 0
      invalidatedAt = ++sequence.next
    }
    const offer = (began: number, revision: A) => {
      if (began <= lastBegan || began <= invalidatedAt) return
      lastBegan = began
      last = revision
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

    /**
     * `read`, its value kept for the rest of the turn when the turn (and no invalidation) ended
     * meanwhile, and for the requests that began before it; `done` gets its end.
     */
    const readForTurn = (done: Deferred.Deferred<A, E>) =>
      Effect.suspend(() => {
        const began = epoch
        const order = ++sequence.next
        if (!turnEndAwaited) {
          turnEndAwaited = true
          atTurnEnd(endTurn)
        }
        underway = done
        underwayBegan = order
        return Effect.onExit(
          Effect.tap(read, (revision) => {
            if (epoch === began) {
              kept = true
              current = revision
            }
            // Not after an invalidation that came while it was under way (`underwayBegan` moved),
            // nor over a newer read offered meanwhile.
            if (underwayBegan === order && order > lastBegan) {
              lastBegan = order
              last = revision
            }
          }),
          (exit) => {
            if (underway === done) {
              underway = undefined
              underwayBegan = 0
            }
            return Deferred.done(done, exit)
          }
        )
      })

    /**
     * A read that began after the caller's request did, joined: if that read's caller was
     * interrupted, the call reads for itself.
     */
    const join = (done: Deferred.Deferred<A, E>): Effect.Effect<A, E> =>
      Effect.catchAllCause(
        Deferred.await(done),
        (cause) => Cause.isInterruptedOnly(cause) && !closed ? get : Effect.failCause(cause)
      )

    // Reads for each batch of waiting calls in turn, until none waits.
    const reader: Effect.Effect<void> = Effect.suspend(() => {
      const batch = waiting
      if (batch === undefined) {
        reading = false
        return Effect.void
      }
      // From here on, a new call waits for the next read: this one has started.
      waiting = undefined
      return Effect.zipRight(Effect.exit(readForTurn(batch)), reader)
    })
    const startReader = Effect.asVoid(Effect.forkIn(reader, scope))

    /**
     * A call that finds no read under way reads itself, in its own fiber: a store that answers at
     * once (SQLite, memory) costs no suspension. Calls made while that read is under way wait for
     * the next read, which starts when it ends.
     */
    const lead = Effect.ensuring(
      Effect.suspend(() => readForTurn(Deferred.unsafeMake<A, E>(FiberId.none))),
      Effect.suspend(() => {
        reading = false
        if (waiting === undefined || closed) return Effect.void
        reading = true
        return startReader
      })
    )

    const get: Effect.Effect<A, E> = Effect.withFiberRuntime((fiber) => {
      if (kept) return Effect.succeed(current!)
      const began = fiber.getFiberRef(requestBegan)
      if (lastBegan > began) return Effect.succeed(last!)
      if (underway !== undefined && underwayBegan > began) return join(underway)
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

    return { get, invalidate: Effect.sync(invalidate), offer }
  })
