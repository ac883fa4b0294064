/**
 * `BlobStore` on SQLite: media bytes in the `blobs` table, next to the executions that made them.
 */
import { BlobStore } from "@appexec/core"
import { Clock, Effect, Layer, Option } from "effect"
import { SqliteClient } from "./SqliteClient.js"

/** The blob store over the instance's connection. */
export const make = Effect.gen(function*() {
  const client = yield* SqliteClient
  const db = client.builder
  const service: BlobStore.BlobStore["Type"] = {
    put: Effect.fn("SqliteBlobStore.put")((key, blob) =>
      Effect.flatMap(Clock.currentTimeMillis, (now) =>
        client.execute("put blob", (c) => {
          const columns = { content_type: blob.contentType, bytes: Buffer.from(blob.bytes), created_at: now }
          c.run(
            db
              .insertInto("blobs")
              .values({ key, ...columns })
              .onConflict((oc) => oc.column("key").doUpdateSet(columns))
          )
        }))
    ),
    get: Effect.fn("SqliteBlobStore.get")((key) =>
      client
        .execute("get blob", (c) =>
          c.get(db.selectFrom("blobs").select(["content_type", "bytes"]).where("key", "=", key)))
        .pipe(
          Effect.map((row) =>
            row === undefined
              ? Option.none()
              : Option.some({ contentType: row.content_type, bytes: Uint8Array.from(row.bytes) })
          )
        )
    ),
    deleteUnder: Effect.fn("SqliteBlobStore.deleteUnder")((prefix) =>
      client.execute("delete blobs", (c) => {
        // A range on the primary key rather than LIKE: no wildcard in a key needs escaping.
        c.run(db.deleteFrom("blobs").where("key", ">=", prefix).where("key", "<", `${prefix}\uffff`))
      })
    )
  }
  return service
})

/** Layer of the blob store; needs the connection (see `SqliteStorage`). */
export const layer = Layer.effect(BlobStore.BlobStore, make)
