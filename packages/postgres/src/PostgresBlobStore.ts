/**
 * `BlobStore` on PostgreSQL: media bytes in the `blobs` table (`bytea`), so that every process of
 * a deployment serves every medium, whichever worker produced it.
 */
import { BlobStore } from "@appexec/core"
import { Clock, Effect, Layer, Option } from "effect"
import { sql } from "kysely"
import { PostgresClient } from "./PostgresClient.js"

/** The blob store over the instance's pool. */
export const make = Effect.gen(function*() {
  const client = yield* PostgresClient
  const service: BlobStore.BlobStore["Type"] = {
    put: Effect.fn("PostgresBlobStore.put")((key, blob) =>
      Effect.flatMap(Clock.currentTimeMillis, (now) =>
        client.execute("put blob", async (db) => {
          const columns = { content_type: blob.contentType, bytes: Buffer.from(blob.bytes), created_at: now }
          await db
            .insertInto("blobs")
            .values({ key, ...columns })
            .onConflict((oc) => oc.column("key").doUpdateSet(columns))
            .execute()
        }))
    ),
    get: Effect.fn("PostgresBlobStore.get")((key) =>
      client
        .execute("get blob", (db) =>
          db.selectFrom("blobs").select(["content_type", "bytes"]).where("key", "=", key).executeTakeFirst())
        .pipe(
          Effect.map((row) =>
            row === undefined
              ? Option.none()
              : Option.some({ contentType: row.content_type, bytes: Uint8Array.from(row.bytes) })
          )
        )
    ),
    deleteUnder: Effect.fn("PostgresBlobStore.deleteUnder")((prefix) =>
      client.execute("delete blobs", async (db) => {
        // `starts_with` rather than LIKE: no wildcard in a key needs escaping.
        await db.deleteFrom("blobs").where(sql<boolean>`starts_with(key, ${prefix})`).execute()
      })
    )
  }
  return service
})

/** Layer of the blob store; needs the pool (see `PostgresStorage`). */
export const layer = Layer.effect(BlobStore.BlobStore, make)
