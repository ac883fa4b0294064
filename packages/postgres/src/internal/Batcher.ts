/**
 * Group commits of one kind of write: what callers submit while a batch is under way is written
 * together, in one statement, as soon as that batch is done. A write submitted while nothing is
 * under way goes at once (no timer): an idle worker pays nothing for the batching, a busy one
 * sends one round trip (and one commit) for many writes, as graphile-worker groups completions.
 */
import { Deferred, Effect, Exit, type Scope } from "effect"

interface Pending<I, O, E> {
  readonly item: I
  readonly done: Deferred.Deferred<O, E>
}

/**
 * A batcher over `write`, which gets up to `maxSize` items with distinct keys (an item whose key
 * is already in the batch waits for the next one) and answers each item's result, in order.
 * Every item of a failed batch fails with its error. Batches run in `scope`.
 */
export const make = <I, O, E>(options: {
  readonly maxSize: number
  readonly key: (item: I) => string
  readonly write: (items: ReadonlyArray<I>) => Effect.Effect<ReadonlyArray<O>, E>
}): Effect.Effect<(item: I) => Effect.Effect<O, E>, never, Scope.Scope> =>
  Effect.gen(function*() {
    const scope = yield* Effect.scope
    let pending: Array<Pending<I, O, E>> = []
    let writing = false

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
          Effect.forEach(
            batch,
            (entry, i) => Deferred.done(entry.done, Exit.map(exit, (results) => results[i]!)),
            { discard: true }
          )
        ),
        Effect.zipRight(drain)
      )
    })

    return (item: I) =>
      Effect.flatMap(Deferred.make<O, E>(), (done) => {
        pending.push({ item, done })
        if (writing) return Deferred.await(done)
        writing = true
        return Effect.zipRight(Effect.forkIn(drain, scope), Deferred.await(done))
      })
  })
