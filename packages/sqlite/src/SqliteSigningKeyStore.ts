/**
 * `SigningKeyStore` on SQLite: the `signing_keys` table, in insertion order.
 */
import { SigningKeyStore } from "@appexec/core"
import { Effect, Layer, Schema } from "effect"
import { decode } from "./internal/RowDecoding.js"
import { SqliteClient } from "./SqliteClient.js"

const decodeKeys = decode(Schema.Array(SigningKeyStore.SigningKeyRecord), "read signing keys")

/** The signing-key store over the instance's connection. */
export const make = Effect.gen(function*() {
  const client = yield* SqliteClient
  const db = client.builder
  const service: SigningKeyStore.SigningKeyStore["Type"] = {
    list: client
      .execute("list signing keys", (c) =>
        c.all(
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
        ))
      .pipe(
        Effect.map((rows) =>
          rows.map(({ publishedUntil, ...row }) => (publishedUntil === null ? row : { ...row, publishedUntil }))
        ),
        Effect.flatMap(decodeKeys)
      ),
    insert: Effect.fn("SqliteSigningKeyStore.insert")((key) =>
      client.execute("insert signing key", (c) => {
        c.run(
          db
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
        )
      })
    ),
    replaceSecret: Effect.fn("SqliteSigningKeyStore.replaceSecret")((kid, secretKey) =>
      client.execute("replace signing key secret", (c) => {
        c.run(db.updateTable("signing_keys").set({ secret_key: secretKey }).where("kid", "=", kid))
      })
    ),
    retireAllBut: Effect.fn("SqliteSigningKeyStore.retireAllBut")((keep, at, publishedUntil) =>
      client.execute("retire signing keys", (c) => {
        c.run(
          db
            .updateTable("signing_keys")
            .set({ retired_at: at, published_until: publishedUntil ?? null })
            .where("kid", "!=", keep)
            .where("retired_at", "is", null)
        )
      })
    )
  }
  return service
})

/** Layer of the signing-key store; needs the connection (see `SqliteStorage`). */
export const layer = Layer.effect(SigningKeyStore.SigningKeyStore, make)
