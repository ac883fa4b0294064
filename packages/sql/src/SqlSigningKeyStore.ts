/**
 * `SigningKeyStore` on SQL, for every dialect: the `signing_keys` table, in insertion order. On a
 * database shared by many processes every one signs with the same key set, and a rotation by any
 * of them is seen by all (the `SigningKeys` service reads the store on every use).
 */
import { SigningKeyStore } from "@appexec/core"
import { Effect, Layer } from "effect"
import { signingKeyOfRow } from "./RowMapping.js"
import { SqlRunner } from "./SqlRunner.js"

/** The signing-key store over the runner. */
export const make = Effect.gen(function*() {
  const runner = yield* SqlRunner
  const db = runner.builder
  const service: SigningKeyStore.SigningKeyStore["Type"] = {
    list: runner
      .all(
        "list signing keys",
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
      )
      .pipe(Effect.map((rows) => rows.map(signingKeyOfRow))),
    insert: Effect.fn("SqlSigningKeyStore.insert")((key) =>
      runner.run(
        "insert signing key",
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
      ).pipe(Effect.asVoid)
    ),
    replaceSecret: Effect.fn("SqlSigningKeyStore.replaceSecret")((kid, secretKey) =>
      runner.run(
        "replace signing key secret",
        db.updateTable("signing_keys").set({ secret_key: secretKey }).where("kid", "=", kid)
      ).pipe(Effect.asVoid)
    ),
    retireAllBut: Effect.fn("SqlSigningKeyStore.retireAllBut")((keep, at, publishedUntil) =>
      runner.run(
        "retire signing keys",
        db
          .updateTable("signing_keys")
          .set({ retired_at: at, published_until: publishedUntil ?? null })
          .where("kid", "!=", keep)
          .where("retired_at", "is", null)
      ).pipe(Effect.asVoid)
    )
  }
  return service
})

/** Layer of the signing-key store; needs the runner of an adapter. */
export const layer = Layer.effect(SigningKeyStore.SigningKeyStore, make)
