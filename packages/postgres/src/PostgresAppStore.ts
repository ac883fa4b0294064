/**
 * `AppStore` on PostgreSQL: the dialect-neutral store (`@appexec/sql`'s `SqlAppStore`) with the
 * apps it reads kept in memory while the app revision stays put (`app_revision`, one row that a
 * trigger bumps in the transaction of every write of `apps`, whichever process writes: migration
 * 0008). Every start reads its app; with the cache, the starts that come while one read of the
 * revisions is under way share the next one (`internal/Revisions`, which reads the key revision of
 * the key cache in the same statement), one round trip for all of them instead of one app read
 * each.
 *
 * A `get` never takes a revision read that was already under way when it began: it waits for the
 * next one (core's `RevisionMemo`). So an app written (saved, made private, replaced by a new
 * version) by any process before a `get` began is read as written; reads of the revision never
 * overlap, so a revision, once passed, does not come back.
 */
import { AppStore } from "@appexec/core"
import { SqlAppStore } from "@appexec/sql"
import { Effect, Layer, Option } from "effect"
import { Revisions } from "./internal/Revisions.js"

/** Most apps the store keeps as read. */
const APP_CACHE_SIZE = 1_000

/** The app store over the runner and the shared read of the revisions. */
export const make = Effect.gen(function*() {
  const revisions = yield* Revisions
  const store = yield* SqlAppStore.make

  /**
   * Apps as read under `cachedRevision`: when a read of the revision finds it moved, the cache is
   * emptied; an app is kept only under the revision read before it was. This process's own saves
   * empty it too (and make its next request read the revisions again). At most
   * `APP_CACHE_SIZE` apps, the oldest read dropped first; an app not found is not kept.
   */
  const cache = new Map<string, AppStore.AppRecord>()
  let cachedRevision: number | undefined

  const service: AppStore.AppStore["Type"] = {
    ...store,
    save: (app, version) =>
      Effect.ensuring(
        store.save(app, version),
        Effect.zipRight(
          Effect.sync(() => {
            cache.clear()
            cachedRevision = undefined
          }),
          revisions.invalidate
        )
      ),
    cached: (appId) => {
      const app = cachedRevision === undefined ? undefined : cache.get(appId)
      return app === undefined ? undefined : { app, revision: cachedRevision! }
    },
    // Every app request and every start reads one: untraced.
    get: (appId) =>
      Effect.flatMap(revisions.get, ({ apps: now }) => {
        if (now !== cachedRevision) {
          cache.clear()
          cachedRevision = now
        }
        const cached = cache.get(appId)
        if (cached !== undefined) return Effect.succeed(Option.some(cached))
        return Effect.tap(store.get(appId), (app) => {
          if (Option.isNone(app) || cachedRevision !== now) return
          cache.set(appId, app.value)
          if (cache.size > APP_CACHE_SIZE) cache.delete(cache.keys().next().value!)
        })
      })
  }
  return service
})

/** Layer of the app store; needs the runner and the read of the revisions (see `PostgresStorage`). */
export const layer = Layer.effect(AppStore.AppStore, make)
