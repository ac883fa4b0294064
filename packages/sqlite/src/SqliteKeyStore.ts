/**
 * `KeyStore` on SQLite: the dialect-neutral store (`@appexec/sql`'s `SqlKeyStore`) and the key
 * revision, one row of `key_revision` that triggers on `api_keys` bump (migration 0006).
 */
import { KeyStore } from "@appexec/core"
import { PreparedQuery, SqlKeyStore } from "@appexec/sql"
import { Effect, Layer } from "effect"
import { SqliteClient } from "./SqliteClient.js"

/** The key store over the instance's connection; needs the runner too (see `SqliteStorage`). */
export const make = Effect.gen(function*() {
  const client = yield* SqliteClient
  const store = yield* SqlKeyStore.make
  // Read on every authenticated request when keys are cached: one row, compiled once.
  const revision = PreparedQuery.make(() =>
    client.builder.selectFrom("key_revision").select("revision").where("id", "=", 1)
  )
  const service: KeyStore.KeyStore["Type"] = {
    ...store,
    keyRevision: client.execute("read key revision", (c) => c.get(revision.bind({}))?.revision ?? 0)
  }
  return service
})

/** Layer of the key store; needs the connection and the runner (see `SqliteStorage`). */
export const layer = Layer.effect(KeyStore.KeyStore, make)
