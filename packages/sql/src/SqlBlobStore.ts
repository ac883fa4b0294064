/**
 * `BlobStore` on SQL, for every dialect: media bytes in the `blobs` table, next to the executions
 * that made them (on a shared database every process serves every medium). `stat` and
 * `getRange` read `length(bytes)` and `substr(bytes, …)` (SQLite blobs and PostgreSQL `bytea`
 * alike), so a range of a large video is not read whole; a blob's version is its `created_at`,
 * which every put advances, and also its modification time in a listing. A listing reads a page
 * of keys at a time, after the last key of the page before (so deletions between pages are
 * harmless).
 */
import { BlobStore } from "@appexec/core"
import { Chunk, Clock, Effect, Layer, Option, Stream } from "effect"
import { sql } from "kysely"
import { SqlRunner } from "./SqlRunner.js"

/** Keys a listing reads (and a delete of several keys binds) at once. */
const PAGE = 500

/** The blob store over the runner. */
export const make = Effect.gen(function*() {
  const runner = yield* SqlRunner
  const db = runner.builder
  const service: BlobStore.BlobStore["Type"] = {
    put: Effect.fn("SqlBlobStore.put")(function*(key, blob) {
      const now = yield* Clock.currentTimeMillis
      const columns = { content_type: blob.contentType, bytes: blob.bytes }
      yield* runner.run(
        "put blob",
        db
          .insertInto("blobs")
          .values({ key, ...columns, created_at: now })
          // A replacement's created_at is later than the replaced one's even within a
          // millisecond: it is the blob's version (an ETag derives from it).
          .onConflict((oc) =>
            oc.column("key").doUpdateSet({
              ...columns,
              created_at: sql<number>`CASE WHEN excluded.created_at > blobs.created_at
                THEN excluded.created_at ELSE blobs.created_at + 1 END`
            })
          )
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
    stat: Effect.fn("SqlBlobStore.stat")((key) =>
      runner
        .first(
          "stat blob",
          db
            .selectFrom("blobs")
            .select(["content_type", "created_at", sql<number | string>`length(bytes)`.as("size")])
            .where("key", "=", key)
        )
        .pipe(
          Effect.map((row) =>
            row === undefined
              ? Option.none()
              : Option.some({
                contentType: row.content_type,
                size: Number(row.size),
                version: String(row.created_at)
              })
          )
        )
    ),
    getRange: Effect.fn("SqlBlobStore.getRange")((key, start, endInclusive) =>
      runner
        .first(
          "get blob range",
          db
            .selectFrom("blobs")
            .select(
              sql<Uint8Array>`substr(bytes, ${Math.floor(start) + 1}, ${
                Math.max(0, Math.floor(endInclusive) - Math.floor(start) + 1)
              })`.as("part")
            )
            .where("key", "=", key)
        )
        .pipe(
          Effect.map((row) => (row === undefined ? Option.none() : Option.some(Uint8Array.from(row.part ?? []))))
        )
    ),
    deleteUnder: Effect.fn("SqlBlobStore.deleteUnder")((prefix) =>
      runner.run("delete blobs", db.deleteFrom("blobs").where(runner.dialect.startsWith("key", prefix))).pipe(
        Effect.asVoid
      )
    ),
    list: (prefix) =>
      Stream.paginateChunkEffect(Option.none<string>(), (after) =>
        runner
          .all(
            "list blobs",
            db
              .selectFrom("blobs")
              .select(["key", "created_at", sql<number | string>`length(bytes)`.as("size")])
              .where(runner.dialect.startsWith("key", prefix))
              .$if(Option.isSome(after), (query) => query.where("key", ">", Option.getOrElse(after, () => "")))
              .orderBy("key")
              .limit(PAGE)
          )
          .pipe(
            Effect.map((rows) => {
              const entries = rows.map((row) => ({
                key: row.key,
                size: Number(row.size),
                modifiedAt: Number(row.created_at)
              }))
              const last = entries.at(-1)
              return [
                Chunk.fromIterable(entries),
                entries.length < PAGE || last === undefined ? Option.none() : Option.some(Option.some(last.key))
              ] as const
            })
          )),
    deleteKeys: Effect.fn("SqlBlobStore.deleteKeys")(function*(keys) {
      for (let i = 0; i < keys.length; i += PAGE) {
        const page = keys.slice(i, i + PAGE)
        yield* runner.run(
          "delete blobs by key",
          db.deleteFrom("blobs").where(runner.dialect.oneOf("key", runner.dialect.list(page)))
        )
      }
    })
  }
  return service
})

/** Layer of the blob store; needs the runner of an adapter. */
export const layer = Layer.effect(BlobStore.BlobStore, make)
