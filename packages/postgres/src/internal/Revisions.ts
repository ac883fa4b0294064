/**
 * The key and app revisions of the database (migration 0008), read together: one statement
 * answers both, so the key cache of the facade (through `KeyStore.keyRevision`) and the app cache
 * of `PostgresAppStore` share one read (core's `RevisionMemo`): the calls of both that come while a
 * read is under way are served by the next one, which started after they began.
 */
import { type Errors, RevisionMemo } from "@appexec/core"
import { Context, Effect, Layer } from "effect"
import { CompiledQuery } from "kysely"
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
  }
>() {}

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
    return { get: memo.get }
  })
)
