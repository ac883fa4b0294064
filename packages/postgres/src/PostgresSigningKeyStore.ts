/**
 * `SigningKeyStore` on PostgreSQL: the `signing_keys` table, in insertion order. Every process of
 * a deployment signs with the same key set, and a rotation by any of them is seen by all (the
 * `SigningKeys` service reads the store on every use).
 */
import { SigningKeyStore } from "@appexec/core"
import { Effect, Layer, Schema } from "effect"
import { decode } from "./internal/RowDecoding.js"
import { PostgresClient } from "./PostgresClient.js"

const decodeKeys = decode(Schema.Array(SigningKeyStore.SigningKeyRecord), "read signing keys")

/** The signing-key store over the instance's pool. */
export const make = Effect.gen(function*() {
  const client = yield* PostgresClient
  const service: SigningKeyStore.SigningKeyStore["Type"] = {
    list: client
      .execute("list signing keys", (db) =>
        db
          .selectFrom("signing_keys")
          .select([
            "kid",
            "secret_key as secretKey",
            "public_key as publicKey",
            "created_at as createdAt",
            "retired_at as retiredAt",
            "published_until as publishedUntil"
          ])
          .orderBy("seq")
          .execute())
      .pipe(
        Effect.map((rows) =>
          rows.map(({ publishedUntil, ...row }) => (publishedUntil === null ? row : { ...row, publishedUntil }))
        ),
        Effect.flatMap(decodeKeys)
      ),
    insert: Effect.fn("PostgresSigningKeyStore.insert")((key) =>
      client.execute("insert signing key", async (db) => {
        await db
          .insertInto("signing_keys")
          .values({
            kid: key.kid,
            secret_key: key.secretKey,
            public_key: key.publicKey,
            created_at: key.createdAt,
            retired_at: key.retiredAt,
            published_until: key.publishedUntil ?? null
          })
          .onConflict((oc) => oc.column("kid").doNothing())
          .execute()
      })
    ),
    replaceSecret: Effect.fn("PostgresSigningKeyStore.replaceSecret")((kid, secretKey) =>
      client.execute("replace signing key secret", async (db) => {
        await db.updateTable("signing_keys").set({ secret_key: secretKey }).where("kid", "=", kid).execute()
      })
    ),
    retireAllBut: Effect.fn("PostgresSigningKeyStore.retireAllBut")((keep, at, publishedUntil) =>
      client.execute("retire signing keys", async (db) => {
        await db
          .updateTable("signing_keys")
          .set({ retired_at: at, published_until: publishedUntil ?? null })
          .where("kid", "!=", keep)
          .where("retired_at", "is", null)
          .execute()
      })
    )
  }
  return service
})

/** Layer of the signing-key store; needs the pool (see `PostgresStorage`). */
export const layer = Layer.effect(SigningKeyStore.SigningKeyStore, make)
