/**
 * Random secrets that every process of a deployment must share, kept in the `secrets` table:
 * the first process to ask for one creates it, every later one (on any machine) reads the same.
 * The standalone server keeps its media URL key here, so that a URL signed by one process is
 * served by all.
 */
import { Errors } from "@appexec/core"
import { Clock, Effect, Redacted } from "effect"
import { randomBytes } from "node:crypto"
import { PostgresClient } from "./PostgresClient.js"

/** The secret `name` (`bytes` random bytes when created), created on first use. */
export const getOrCreate = Effect.fn("PostgresSecrets.getOrCreate")(function*(name: string, bytes = 32) {
  const client = yield* PostgresClient
  const now = yield* Clock.currentTimeMillis
  const row = yield* client.execute("get or create secret", async (db) => {
    await db
      .insertInto("secrets")
      .values({ name, value: randomBytes(bytes), created_at: now })
      .onConflict((oc) => oc.column("name").doNothing())
      .execute()
    return db.selectFrom("secrets").select("value").where("name", "=", name).executeTakeFirst()
  })
  if (row === undefined) {
    return yield* new Errors.StorageError({ operation: "get or create secret", cause: `secret ${name} is missing` })
  }
  return Redacted.make(Uint8Array.from(row.value))
})
