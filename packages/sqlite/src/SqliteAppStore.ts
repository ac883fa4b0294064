/**
 * `AppStore` on SQLite: the dialect-neutral store (`@appexec/sql`'s `SqlAppStore`) with the apps
 * it reads kept in memory while no other connection has committed anything (`PRAGMA
 * data_version`): every start reads its app, and checking the version costs a third of reading
 * the row.
 */
import { AppStore } from "@appexec/core"
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
  const cache = new Map<string, RowMapping.AppRow>()
  let cachedVersion: number | undefined
  const dataVersion: Compilable<{ readonly data_version: number }> = {
    compile: () => CompiledQuery.raw("PRAGMA data_version")
  }
  const cachedRow = (c: Connection, appId: string) => {
    const version = c.get(dataVersion)?.data_version
    if (version !== cachedVersion) {
      cache.clear()
      cachedVersion = version
    }
    const cached = cache.get(appId)
    if (cached !== undefined) return cached
    const row = c.get(byId.bind({ appId }))
    if (row !== undefined) {
      cache.set(appId, row)
      if (cache.size > APP_CACHE_SIZE) cache.delete(cache.keys().next().value!)
    }
    return row
  }

  const service: AppStore.AppStore["Type"] = {
    ...store,
    // Emptied once the save has run: a read in between finds the new row or is dropped with the rest.
    save: (app, version) => Effect.ensuring(store.save(app, version), Effect.sync(() => cache.clear())),
    // Every app request and every start reads one: untraced.
    get: (appId) =>
      Effect.map(
        client.execute("get app", (c) => cachedRow(c, appId)),
        (row) => Option.map(Option.fromNullable(row), RowMapping.appOfRow)
      )
  }
  return service
})

/** Layer of the app store; needs the connection and the runner (see `SqliteStorage`). */
export const layer = Layer.effect(AppStore.AppStore, make)
