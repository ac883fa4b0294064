/**
 * `AppStore` on SQLite: the dialect-neutral store (`@appexec/sql`'s `SqlAppStore`) with the apps
 * it reads kept in memory while no other connection has committed anything (`PRAGMA
 * data_version`), checked once per turn of the event loop (core's `RevisionMemo`): every start
 * reads its app, and the check is a statement with a read transaction of its own.
 */
import { AppStore, RevisionMemo } from "@appexec/core"
import { PreparedQuery, RowMapping, SqlAppStore } from "@appexec/sql"
import { Effect, Layer, Option } from "effect"
import { type Compilable, CompiledQuery } from "kysely"
import { type Connection, SqliteClient } from "./SqliteClient.js"

/** Most apps the store keeps as read (see `cache` below). */
const APP_CACHE_SIZE = 1_000

/** The app store over the instance's connection; needs the runner too (see `SqliteStorage`). */
export const make = Effect.gen(function*() {
  const client = yield* SqliteClient
  const store = yield* SqlAppStore.make
  const byId = PreparedQuery.make((p: PreparedQuery.Param<{ appId: string }>) =>
    client.builder.selectFrom("apps").select(RowMapping.appColumns).where("app_id", "=", p("appId"))
  )

  /**
   * Apps as last read, while no other connection has committed anything since (`PRAGMA
   * data_version` moves with every commit of another connection, in this process or another,
   * and not with this connection's own): this connection's own writes to `apps` (`save`, the
   * only one) empty it. At most `APP_CACHE_SIZE` apps, the oldest read dropped first.
   */
  const cache = new Map<string, Option.Option<AppStore.AppRecord>>()
  let cachedVersion: number | undefined
  const dataVersion: Compilable<{ readonly data_version: number }> = {
    compile: () => CompiledQuery.raw("PRAGMA data_version")
  }
  // Read once a turn and shared by the reads of that turn, as the key cache reads its revision: a
  // commit of another connection is seen from the first turn that begins after it.
  const version = yield* RevisionMemo.make(
    client.execute("app data version", (c) => c.get(dataVersion)?.data_version)
  )
  // The record as made from its row, kept whole: a start reads it and makes nothing.
  const cachedApp = (c: Connection, appId: string, version: number | undefined): Option.Option<AppStore.AppRecord> => {
    if (version !== cachedVersion) {
      cache.clear()
      cachedVersion = version
    }
    const cached = cache.get(appId)
    if (cached !== undefined) return cached
    const row = c.get(byId.bind({ appId }))
    if (row === undefined) return Option.none()
    const app = Option.some(RowMapping.appOfRow(row))
    cache.set(appId, app)
    if (cache.size > APP_CACHE_SIZE) cache.delete(cache.keys().next().value!)
    return app
  }

  const service: AppStore.AppStore["Type"] = {
    ...store,
    // Emptied once the save has run: a read in between finds the new row or is dropped with the rest.
    save: (app, saved) => Effect.ensuring(store.save(app, saved), Effect.sync(() => cache.clear())),
    // Every app request and every start reads one: untraced.
    get: (appId) =>
      Effect.flatMap(version.get, (current) => client.execute("get app", (c) => cachedApp(c, appId, current)))
  }
  return service
})

/** Layer of the app store; needs the connection and the runner (see `SqliteStorage`). */
export const layer = Layer.scoped(AppStore.AppStore, make)
