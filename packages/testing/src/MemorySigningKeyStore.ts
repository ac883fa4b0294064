/**
 * In-memory `SigningKeyStore`.
 */
import { SigningKeyStore } from "@appexec/core"
import { Effect, Layer } from "effect"

/** A fresh, empty signing-key store. */
export const make = Effect.sync((): SigningKeyStore.SigningKeyStore["Type"] => {
  const keys: Array<SigningKeyStore.SigningKeyRecord> = []
  return {
    list: Effect.sync(() => [...keys]),
    insert: (key) =>
      Effect.sync(() => {
        if (!keys.some((k) => k.kid === key.kid)) keys.push(key)
      }),
    replaceSecret: (kid, secretKey) =>
      Effect.sync(() => {
        const at = keys.findIndex((k) => k.kid === kid)
        if (at >= 0) keys[at] = { ...keys[at]!, secretKey }
      }),
    retireAllBut: (keep, at, publishedUntil) =>
      Effect.sync(() => {
        keys.forEach((k, i) => {
          if (k.kid !== keep && k.retiredAt === null) {
            keys[i] = { ...k, retiredAt: at, ...(publishedUntil === undefined ? {} : { publishedUntil }) }
          }
        })
      })
  }
})

/** Layer of a fresh in-memory signing-key store. */
export const layer = Layer.effect(SigningKeyStore.SigningKeyStore, make)
