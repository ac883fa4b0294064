/**
 * `BlobStore` on SQL, for every dialect: media bytes in the `blobs` table, next to the executions
 * that made them (on a shared database every process serves every medium).
 */
import { BlobStore } from "@appexec/core"
import { Clock, Effect, Layer, Option } from "effect"
import { SqlRunner } from "./SqlRunner.js"

/** The blob store over the runner. */
export const make = Effect.gen(function*() {
  const runner = yield* SqlRunner
  const db = runner.builder
  const service: BlobStore.BlobStore["Type"] = {
    put: Effect.fn("SqlBlobStore.put")(function*(key, blob) {
      const now = yield* Clock.currentTimeMillis
      const columns = { content_type: blob.contentType, bytes: blob.bytes, created_at: now }
      yield* runner.run(
        "put blob",
        db
          .insertInto("blobs")
          .values({ key, ...columns })
          .onConflict((oc) => oc.column("key").doUpdateSet(columns))
      )
    }),
    get: Effect.fn("SqlBlobStore.get")((key) =>
      runner
        .first("get blob", db.selectFrom("blobs").select(["content_type", "bytes"]).where("key", "=", key))
        .pipe(
          Effect.map((row) =>
            row === undefined
              ? Option.none()
              : Option.some({ contentType: row.content_type, bytes: Uint8Array.from(row.bytes) })
          )
        )
    ),
    deleteUnder: Effect.fn("SqlBlobStore.deleteUnder")((prefix) =>
      runner.run("delete blobs", db.deleteFrom("blobs").where(runner.dialect.startsWith("key", prefix))).pipe(
        Effect.asVoid
      )
    )
  }
  return service
})

/** Layer of the blob store; needs the runner of an adapter. */
export const layer = Layer.effect(BlobStore.BlobStore, make)
