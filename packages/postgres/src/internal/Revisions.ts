/**
 * The key and app revisions of the database (migration 0008), read together: one statement
 * answers both, so the key cache of the facade (through `KeyStore.keyRevision`) and the app cache
 * of `PostgresAppStore` share one read (core's `RevisionMemo`): the calls of both that come while a
 * read is under way are served by the next one, which started after they began.
 */
import { type Errors, RateLimitStore, RevisionMemo } from "@appexec/core"
import { SqlRateLimitStore, type SqlRunner } from "@appexec/sql"
import { Context, Effect, Layer } from "effect"
import { CompiledQuery, sql } from "kysely"
import { PostgresClient } from "../PostgresClient.js"

/** Both revisions as one read saw them. */
export interface StoreRevisions {
  readonly keys: number
  readonly apps: number
}

/** The shared read of both revisions. */
export class Revisions extends Context.Tag("@appexec/postgres/Revisions")<
  Revisions,
  {
    /** Both revisions, read by a statement that began after this call did (see `RevisionMemo`). */
    readonly get: Effect.Effect<StoreRevisions, Errors.StorageError>
    /**
     * Both revisions as read by another statement beside its work (`columns`, as the rate-limit
     * hits read them), which began at `began` (`RevisionMemo.begin()`).
     */
    readonly offer: (began: number, read: StoreRevisions) => void
    /** After a write of keys or apps through this process: no earlier read is taken again. */
    readonly invalidate: Effect.Effect<void>
  }
>() {}

/** Both revisions as columns `keys_revision` and `apps_revision` of another statement's answer. */
export const columns = [
  sql<number>`(SELECT revision FROM key_revision WHERE id = 1)`.as("keys_revision"),
  sql<number>`(SELECT revision FROM app_revision WHERE id = 1)`.as("apps_revision")
] as const

// Fixed text: a named statement each connection parses once.
const both = CompiledQuery.raw(
  "SELECT k.revision AS keys, a.revision AS apps FROM key_revision k, app_revision a WHERE k.id = 1 AND a.id = 1"
) as CompiledQuery<StoreRevisions>

/** The read over the pool; waiting calls end when the layer's scope closes. */
export const layer = Layer.scoped(
  Revisions,
  Effect.gen(function*() {
    const client = yield* PostgresClient
    const read = Effect.map(
      client.prepared("read key and app revisions", both),
      ({ rows: [row] }): StoreRevisions => ({ keys: Number(row?.keys ?? 0), apps: Number(row?.apps ?? 0) })
    )
    const memo = yield* RevisionMemo.make(read)
    return { get: memo.get, offer: memo.offer, invalidate: memo.invalidate }
  })
)

/**
 * The rate-limit store (`@appexec/sql`'s) whose hit statements read both revisions too: every
 * `/v1` request hits the limit before it authenticates, so its key and its app are then checked
 * against that read (it began after the request did) without a round trip of their own.
 */
export const rateLimitLayer: Layer.Layer<RateLimitStore.RateLimitStore, never, Revisions | SqlRunner.SqlRunner> = Layer
  .scoped(
    RateLimitStore.RateLimitStore,
    Effect.flatMap(Revisions, (revisions) =>
      SqlRateLimitStore.makeWith({
        alongside: {
          columns,
          begin: RevisionMemo.begin,
          take: (began, row) =>
            revisions.offer(began, { keys: Number(row["keys_revision"] ?? 0), apps: Number(row["apps_revision"] ?? 0) })
        }
      }))
  )
