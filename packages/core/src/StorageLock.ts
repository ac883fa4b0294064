/**
 * Port: a lock that every process on one storage shares, for work that must happen once however
 * many processes start together: the first start's bootstrap (example apps, the `default`
 * workspace and its key) and the first signing key. PostgreSQL takes an advisory lock on a
 * connection of its own; SQLite takes the database's write lock (`BEGIN IMMEDIATE`), and what the
 * process writes meanwhile commits at the end; `layerMemory` is a semaphore per name, for one process. A lock held by
 * a process that dies is released with it (its connection closes).
 *
 * The port is optional: `withLock` runs the work as it is when the storage has no lock.
 */
import { Context, Effect, FiberRef, Layer } from "effect"
import type { StorageError } from "./Errors.js"

/** A lock shared by every process on the storage. */
export class StorageLock extends Context.Tag("@appexec/core/StorageLock")<
  StorageLock,
  {
    /**
     * Runs `effect` while no other process or fiber on the storage runs one under the lock `name`
     * (an adapter may have one lock for every name); released when `effect` ends, however it ends.
     */
    readonly withLock: (
      name: string
    ) => <A, E, R>(effect: Effect.Effect<A, E, R>) => Effect.Effect<A, E | StorageError, R>
  }
>() {}

/** The locks the current fiber holds (through `withLock`). */
const held = FiberRef.unsafeMake<ReadonlySet<string>>(new Set())

/**
 * `effect` under the storage's lock `name`, or as it is when the storage has none or the fiber
 * holds that lock already (work under a lock may call work that takes it).
 */
export const withLock =
  (name: string) => <A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<A, E | StorageError, R> =>
    Effect.flatMap(
      Effect.zip(Effect.serviceOption(StorageLock), FiberRef.get(held)),
      ([lock, names]) =>
        lock._tag === "None" || names.has(name)
          ? effect
          : lock.value.withLock(name)(Effect.locallyWith(effect, held, (all) => new Set([...all, name])))
    )

/** The lock of the first start's bootstrap and of the first signing key. */
export const BOOTSTRAP = "bootstrap"

/** A lock within one process: a semaphore per name (memory storage, tests). */
export const layerMemory: Layer.Layer<StorageLock> = Layer.sync(StorageLock, () => {
  const semaphores = new Map<string, Effect.Semaphore>()
  const semaphoreOf = (name: string) => {
    let semaphore = semaphores.get(name)
    if (semaphore === undefined) semaphores.set(name, semaphore = Effect.unsafeMakeSemaphore(1))
    return semaphore
  }
  return { withLock: (name) => (effect) => semaphoreOf(name).withPermits(1)(effect) }
})
