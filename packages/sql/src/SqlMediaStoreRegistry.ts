/**
 * `MediaStoreRegistry` on SQL, for every dialect: the `media_stores` table, one row per store a
 * process of the deployment kept media in (its location, never its credentials).
 */
import { MediaStoreRegistry } from "@appexec/core"
import { Effect, Layer } from "effect"
import type { Selectable } from "kysely"
import { SqlRunner } from "./SqlRunner.js"
import type { MediaStoresTable } from "./SqlTables.js"

const locationOfRow = (row: Selectable<MediaStoresTable>) =>
  new MediaStoreRegistry.StoreLocation({
    id: row.id,
    uri: row.uri,
    endpoint: row.endpoint,
    region: row.region,
    addedAt: Number(row.added_at)
  })

/** The registry over the runner. */
export const make = Effect.gen(function*() {
  const runner = yield* SqlRunner
  const db = runner.builder
  const service: MediaStoreRegistry.MediaStoreRegistry["Type"] = {
    add: Effect.fn("SqlMediaStoreRegistry.add")((location) =>
      runner.run(
        "add media store",
        db
          .insertInto("media_stores")
          .values({
            id: location.id,
            uri: location.uri,
            endpoint: location.endpoint,
            region: location.region,
            added_at: location.addedAt
          })
          .onConflict((oc) => oc.column("id").doUpdateSet({ endpoint: location.endpoint, region: location.region }))
      ).pipe(Effect.asVoid)
    ),
    list: runner.all(
      "list media stores",
      db.selectFrom("media_stores").selectAll().orderBy("added_at", "desc").orderBy("id")
    ).pipe(Effect.map((rows) => rows.map(locationOfRow))),
    remove: Effect.fn("SqlMediaStoreRegistry.remove")((id) =>
      runner.run("remove media store", db.deleteFrom("media_stores").where("id", "=", id)).pipe(
        Effect.map((deleted) => deleted > 0)
      )
    )
  }
  return service
})

/** Layer of the registry; needs the runner of an adapter. */
export const layer = Layer.effect(MediaStoreRegistry.MediaStoreRegistry, make)
