/**
 * Group commits of one kind of write: what callers submit while a batch is under way is written
 * together, in one statement, as soon as that batch is done. A write submitted while nothing is
 * under way goes at once (no timer): an idle worker pays nothing for the batching, a busy one
 * sends one round trip (and one commit) for many writes, as graphile-worker groups completions.
 */
import { Cause, Deferred, Effect, Exit, Option, type Scope } from "effect"

interface Pending<I, O, E> {
  readonly item: I
  readonly done: Deferred.Deferred<O, E>
}

/**
 * A batcher over `write`, which gets up to `maxSize` items with distinct keys (an item whose key
 * is already in the batch waits for the next one) and answers each item's result, in order.
 * A batch that fails with an error of its rows (`isolate`: a value the database refused) is
 * written again one item at a time, so a bad item fails alone and not the writes that happened
 * to go with it; any other failure (the database unreachable) fails every item of the batch with
 * it. Batches run in `scope`; when it closes, the items not yet written, and those of a batch cut
 * short, end interrupted (no caller waits forever), and later submissions are interrupted at once.
 */
export const make = <I, O, E>(options: {
  readonly maxSize: number
  readonly key: (item: I) => string
  readonly write: (items: ReadonlyArray<I>) => Effect.Effect<ReadonlyArray<O>, E>
  /** Whether a failed batch is written again item by item. */
  readonly isolate: (error: E) => boolean
}): Effect.Effect<(item: I) => Effect.Effect<O, E>, never, Scope.Scope> =>
  Effect.gen(function*() {
    const scope = yield* Effect.scope
    let pending: Array<Pending<I, O, E>> = []
    let writing = false
    let closed = false
    const interruptAll = (entries: ReadonlyArray<Pending<I, O, E>>) =>
      Effect.forEach(entries, (entry) => Deferred.interrupt(entry.done), { discard: true })
    // Added before any batch is forked into the scope, so it runs after their interruption.
    yield* Effect.addFinalizer(() =>
      Effect.suspend(() => {
        closed = true
        const left = pending
        pending = []
        return interruptAll(left)
      })
    )

    const take = () => {
      const batch: Array<Pending<I, O, E>> = []
      const rest: Array<Pending<I, O, E>> = []
      const keys = new Set<string>()
      for (const entry of pending) {
        const key = options.key(entry.item)
        if (batch.length < options.maxSize && !keys.has(key)) {
          keys.add(key)
          batch.push(entry)
        } else {
          rest.push(entry)
        }
      }
      pending = rest
      return batch
    }

    const drain: Effect.Effect<void> = Effect.suspend(() => {
      const batch = take()
      if (batch.length === 0) {
        writing = false
        return Effect.void
      }
      return options.write(batch.map((entry) => entry.item)).pipe(
        Effect.exit,
        Effect.flatMap((exit) =>
          batch.length > 1 && Exit.isFailure(exit) && Option.exists(Cause.failureOption(exit.cause), options.isolate)
            ? Effect.forEach(
              batch,
              (entry) =>
                options.write([entry.item]).pipe(
                  Effect.exit,
                  Effect.flatMap((alone) => Deferred.done(entry.done, Exit.map(alone, (results) => results[0]!)))
                ),
              { discard: true }
            )
            : Effect.forEach(
              batch,
              (entry, i) => Deferred.done(entry.done, Exit.map(exit, (results) => results[i]!)),
              { discard: true }
            )
        ),
        Effect.onInterrupt(() => interruptAll(batch)),
        Effect.zipRight(drain)
      )
    })

    return (item: I) =>
      Effect.flatMap(Deferred.make<O, E>(), (done) => {
        if (closed) return Effect.interrupt
        pending.push({ item, done })
        if (writing) return Deferred.await(done)
        writing = true
        return Effect.zipRight(Effect.forkIn(drain, scope), Deferred.await(done))
      })
  })
