/**
 * `KeyStore` on PostgreSQL: the dialect-neutral store (`@appexec/sql`'s `SqlKeyStore`) whose key
 * revision is read together with the app revision (`internal/Revisions`), so the key cache of the
 * facade and the app cache of `PostgresAppStore` share one statement.
 */
import { KeyStore } from "@appexec/core"
import { SqlKeyStore } from "@appexec/sql"
import { Effect, Layer } from "effect"
import { Revisions } from "./internal/Revisions.js"

/** The key store over the runner and the shared read of the revisions. */
export const make = Effect.gen(function*() {
  const revisions = yield* Revisions
  const store = yield* SqlKeyStore.make
  const service: KeyStore.KeyStore["Type"] = {
    ...store,
    keyRevision: Effect.map(revisions.get, (read) => read.keys),
    // A revocation through this process: its next request reads the moved revision.
    revokeKey: (idOrHint, at) => Effect.ensuring(store.revokeKey(idOrHint, at), revisions.invalidate)
  }
  return service
})

/** Layer of the key store; needs the runner and the read of the revisions (see `PostgresStorage`). */
export const layer = Layer.effect(KeyStore.KeyStore, make)
