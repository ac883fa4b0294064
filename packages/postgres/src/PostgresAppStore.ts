/**
 * `AppStore` on PostgreSQL: the dialect-neutral store (`@appexec/sql`'s `SqlAppStore`) with the
 * apps it reads kept in memory while the app revision stays put (`app_revision`, one row that a
 * trigger bumps in the transaction of every write of `apps`, whichever process writes: migration
 * 0008). Every start reads its app; with the cache, the starts that come while one read of the
 * revision is under way share the next one, one round trip for all of them instead of one app read
 * each.
 *
 * A `get` never takes a revision read that was already under way when it began: it waits for the
 * next one, which starts when that read ends. So an app written (saved, made private, replaced by
 * a new version) by any process before a `get` began is read as written; reads of the revision
 * never overlap, so a revision, once passed, does not come back.
 */
import { AppStore, type Errors } from "@appexec/core"
import { PreparedQuery, RowMapping, SqlAppStore, SqlRunner } from "@appexec/sql"
import { Deferred, Effect, FiberId, Layer, Option } from "effect"

/** Most apps the store keeps as read. */
const APP_CACHE_SIZE = 1_000

/** The app store over the runner. */
export const make = Effect.gen(function*() {
  const runner = yield* SqlRunner.SqlRunner
  const scope = yield* Effect.scope
  const store = yield* SqlAppStore.make
  const db = runner.builder
  const byId = PreparedQuery.make((p: PreparedQuery.Param<{ appId: string }>) =>
    db.selectFrom("apps").select(RowMapping.appColumns).where("app_id", "=", p("appId"))
  )
  const revisionQuery = PreparedQuery.make(() => db.selectFrom("app_revision").select("revision").where("id", "=", 1))
  const readRevision = Effect.map(
    runner.first("read app revision", revisionQuery.bind({})),
    (row) => Number(row?.revision ?? 0)
  )

  /** Whether a read of the revision is under way; the calls that came meanwhile wait for `waiting`. */
  let reading = false
  let waiting: Deferred.Deferred<number, Errors.StorageError> | undefined
  /** Reads for each batch of waiting calls in turn, until none waits. */
  const reader: Effect.Effect<void> = Effect.suspend(() => {
    const batch = waiting
    if (batch === undefined) {
      reading = false
      return Effect.void
    }
    waiting = undefined
    return Effect.zipRight(
      Effect.exit(readRevision).pipe(
        Effect.flatMap((exit) => Deferred.done(batch, exit)),
        Effect.onInterrupt(() => Deferred.interrupt(batch))
      ),
      reader
    )
  })
  /** The revision, read after this call began: at once when no read is under way, else by the next read. */
  const revision: Effect.Effect<number, Errors.StorageError> = Effect.suspend(() => {
    if (!reading) {
      reading = true
      return Effect.ensuring(
        readRevision,
        Effect.suspend(() => {
          if (waiting === undefined) {
            reading = false
            return Effect.void
          }
          return Effect.asVoid(Effect.forkIn(reader, scope))
        })
      )
    }
    if (waiting === undefined) waiting = Deferred.unsafeMake<number, Errors.StorageError>(FiberId.none)
    return Deferred.await(waiting)
  })

  /**
   * Apps as read under `cachedRevision`: when a read of the revision finds it moved, the cache is
   * emptied; a row is kept only under the revision read before it was. This process's own saves
   * empty it too. At most `APP_CACHE_SIZE` apps, the oldest read dropped first.
   */
  const cache = new Map<string, RowMapping.AppRow>()
  let cachedRevision: number | undefined

  const service: AppStore.AppStore["Type"] = {
    ...store,
    save: (app, version) =>
      Effect.ensuring(
        store.save(app, version),
        Effect.sync(() => {
          cache.clear()
          cachedRevision = undefined
        })
      ),
    // Every app request and every start reads one: untraced.
    get: (appId) =>
      Effect.flatMap(revision, (now) => {
        if (now !== cachedRevision) {
          cache.clear()
          cachedRevision = now
        }
        const cached = cache.get(appId)
        if (cached !== undefined) return Effect.succeed(Option.some(RowMapping.appOfRow(cached)))
        return Effect.map(runner.first("get app", byId.bind({ appId })), (row) => {
          if (row === undefined) return Option.none()
          if (cachedRevision === now) {
            cache.set(appId, row)
            if (cache.size > APP_CACHE_SIZE) cache.delete(cache.keys().next().value!)
          }
          return Option.some(RowMapping.appOfRow(row))
        })
      })
  }
  return service
})

/** Layer of the app store; needs the runner (see `PostgresStorage`). */
export const layer = Layer.scoped(AppStore.AppStore, make)
