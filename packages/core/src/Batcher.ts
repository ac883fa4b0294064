/**
 * Group commits for adapters: what callers submit while a batch is under way is written together,
 * in one statement, as soon as that batch is done. A submission that finds nothing under way
 * starts a fiber that writes (no timer): the fiber runs once the fibers ready at that moment have
 * run up to their own waits, so the submissions of one turn of the event loop (the requests that
 * Node read together, each up to its rate-limit hit or its insert) go in the first write with it,
 * not after it. An idle process pays a fiber per write for the batching; a busy one sends one
 * round trip (and one commit) for many writes, as graphile-worker groups completions. Used by the
 * PostgreSQL execution store (inserts, saves) and the SQL rate-limit store (hits).
 */
import { Cause, Effect, Exit, FiberId, Option, type Scope } from "effect"

/**
 * A submission waiting for its write: its answer is handed to `resume` once its caller waits, or
 * kept in `exit` until then. No `Deferred` (whose making copies a prototype's properties): every
 * save and insert of the hot paths comes through here.
 */
interface Pending<I, O, E> {
  readonly item: I
  exit: Exit.Exit<O, E> | undefined
  resume: ((exit: Exit.Exit<O, E>) => void) | undefined
}

/** Answers a submission, once. */
const done = <I, O, E>(entry: Pending<I, O, E>, exit: Exit.Exit<O, E>) => {
  if (entry.exit !== undefined) return
  entry.exit = exit
  entry.resume?.(exit)
}

/** Waits for the answer of a submission. */
const answerOf = <I, O, E>(entry: Pending<I, O, E>): Effect.Effect<O, E> =>
  Effect.async<O, E>((resume) => {
    if (entry.exit !== undefined) return resume(entry.exit)
    entry.resume = resume
  })

/** How a batcher writes. */
export interface Options<I, O, E> {
  /** Most items in one write. */
  readonly maxSize: number
  /**
   * Items whose keys are equal never go in one write (the later waits for the next); without it,
   * any items may go together (a write that merges equal items itself, as rate-limit hits).
   */
  readonly key?: ((item: I) => string) | undefined
  /** Writes the items and answers each item's result, in order. */
  readonly write: (items: ReadonlyArray<I>) => Effect.Effect<ReadonlyArray<O>, E>
  /** Whether a failed batch is written again item by item (a value the database refused). */
  readonly isolate?: ((error: E) => boolean) | undefined
}

/**
 * A batcher over `write`. A batch that fails with an error for which `isolate` holds (a value the
 * database refused) is written again one item at a time, so a bad item fails alone and not the
 * writes that happened to go with it; any other failure (the database unreachable) fails every
 * item of the batch with it. Every batch is written by a fiber of the scope; when it closes, the
 * items not yet written, and those of a batch cut short, end interrupted (no caller waits
 * forever), and later submissions are interrupted at once.
 */
export const make = <I, O, E>(
  options: Options<I, O, E>
): Effect.Effect<(item: I) => Effect.Effect<O, E>, never, Scope.Scope> =>
  Effect.gen(function*() {
    const scope = yield* Effect.scope
    const { isolate, key, maxSize, write } = options
    let pending: Array<Pending<I, O, E>> = []
    let writing = false
    let closed = false
    const interruptAll = (entries: ReadonlyArray<Pending<I, O, E>>) =>
      Effect.sync(() => {
        for (const entry of entries) done(entry, Exit.interrupt(FiberId.none))
      })
    // Added before any batch is forked into the scope, so it runs after their interruption.
    yield* Effect.addFinalizer(() =>
      Effect.suspend(() => {
        closed = true
        const left = pending
        pending = []
        return interruptAll(left)
      })
    )

    const take = (): Array<Pending<I, O, E>> => {
      if (key === undefined) {
        const batch = pending.length <= maxSize ? pending : pending.slice(0, maxSize)
        pending = pending.length <= maxSize ? [] : pending.slice(maxSize)
        return batch
      }
      const batch: Array<Pending<I, O, E>> = []
      const rest: Array<Pending<I, O, E>> = []
      const keys = new Set<string>()
      for (const entry of pending) {
        const k = key(entry.item)
        if (batch.length < maxSize && !keys.has(k)) {
          keys.add(k)
          batch.push(entry)
        } else {
          rest.push(entry)
        }
      }
      pending = rest
      return batch
    }

    const settle = (batch: ReadonlyArray<Pending<I, O, E>>) => (exit: Exit.Exit<ReadonlyArray<O>, E>) =>
      batch.length > 1 && Exit.isFailure(exit) && isolate !== undefined &&
        Option.exists(Cause.failureOption(exit.cause), isolate)
        ? Effect.forEach(
          batch,
          (entry) =>
            write([entry.item]).pipe(
              Effect.exit,
              Effect.map((alone) => done(entry, Exit.map(alone, (results) => results[0]!)))
            ),
          { discard: true }
        )
        : Effect.sync(() => batch.forEach((entry, i) => done(entry, Exit.map(exit, (results) => results[i]!))))

    /** Writes the waiting items, batch after batch, until none waits; then stops. */
    const drain: Effect.Effect<void> = Effect.suspend(() => {
      const batch = take()
      if (batch.length === 0) {
        writing = false
        return Effect.void
      }
      return write(batch.map((entry) => entry.item)).pipe(
        Effect.exit,
        Effect.flatMap(settle(batch)),
        Effect.onInterrupt(() => interruptAll(batch)),
        Effect.zipRight(drain)
      )
    })

    // Every write of the hot paths goes through here: no generator.
    return (item: I): Effect.Effect<O, E> =>
      Effect.suspend(() => {
        if (closed) return Effect.interrupt
        const entry: Pending<I, O, E> = { item, exit: undefined, resume: undefined }
        pending.push(entry)
        if (!writing) {
          writing = true
          // A fiber of the scope writes, once the fibers ready now (the requests of this turn) have
          // added theirs: it starts after them, so they all go in this first write.
          return Effect.zipRight(Effect.forkIn(drain, scope), answerOf(entry))
        }
        return answerOf(entry)
      })
  })
