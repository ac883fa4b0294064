/**
 * Signing seeds at rest: sealed with the master key before they reach the store, opened to sign
 * (signatures verified by node:crypto), keys stored in the clear sealed at start, keys sealed
 * with a previous master key sealed again, every key sealed again on rotation, and a start with
 * the wrong master key refused.
 */
import { AppexecConfig, SecretSealing, SigningKeys, SigningKeyStore, WebhookSignature } from "@appexec/core"
import { MemorySigningKeyStore, SeededIds } from "@appexec/testing"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Exit, Layer, Redacted } from "effect"
import { createPublicKey, verify } from "node:crypto"

const masterKey = (fill: number) => Redacted.make(new Uint8Array(32).fill(fill))

const keysOver = (
  store: Layer.Layer<SigningKeyStore.SigningKeyStore>,
  config: Partial<AppexecConfig.AppexecOptions> = {}
) =>
  SigningKeys.layer.pipe(
    Layer.provide(Layer.mergeAll(store, SeededIds.layer("sealing"), AppexecConfig.AppexecConfig.layer(config)))
  )

const storedKeys = (store: Layer.Layer<SigningKeyStore.SigningKeyStore>) =>
  Effect.flatMap(SigningKeyStore.SigningKeyStore, (s) => s.list).pipe(Effect.provide(store))

/** Signs a message with the instance's keys and checks the signature with node:crypto. */
const signsVerifiably = Effect.gen(function*() {
  const keys = yield* SigningKeys.SigningKeys
  const message = WebhookSignature.signedMessage("1800000000", "{\"data\":{}}")
  const { kid, signature } = yield* keys.sign(message)
  const jwk = (yield* keys.keySet).keys.find((k) => k.kid === kid)!
  const publicKey = createPublicKey({ key: { kty: jwk.kty, crv: jwk.crv, x: jwk.x }, format: "jwk" })
  return verify(null, message, publicKey, Buffer.from(signature, "hex"))
})

const freshStore = Effect.map(MemorySigningKeyStore.make, (s) => Layer.succeed(SigningKeyStore.SigningKeyStore, s))

describe("secret sealing", () => {
  it.effect("seals and opens with AES-256-GCM bound to the context; another key or context does not open", () =>
    Effect.gen(function*() {
      const sealer = yield* SecretSealing.make(masterKey(1))
      const secret = new Uint8Array(32).fill(7)
      const sealed = yield* sealer.seal(secret, "kid-a")
      expect(sealed.startsWith(SecretSealing.SEALED_PREFIX)).toBe(true)
      expect(sealed).not.toContain(Buffer.from(secret).toString("hex"))
      expect(yield* sealer.seal(secret, "kid-a")).not.toBe(sealed)
      expect((yield* sealer.open(sealed, "kid-a")).secret).toEqual(secret)
      expect(Exit.isFailure(yield* Effect.exit(sealer.open(sealed, "kid-b")))).toBe(true)
      const other = yield* SecretSealing.make(masterKey(2))
      expect(Exit.isFailure(yield* Effect.exit(other.open(sealed, "kid-a")))).toBe(true)
      const rotated = yield* SecretSealing.make(masterKey(2), [masterKey(1)])
      expect(yield* rotated.open(sealed, "kid-a")).toEqual({ secret, current: false, by: "previous" })
    }))

  it("reads master keys as base64url, base64 or hex of 32 bytes only", () => {
    const bytes = new Uint8Array(32).map((_, i) => i * 7)
    const key = Redacted.make(bytes)
    const text = SecretSealing.formatMasterKey(key)
    expect(Redacted.value(SecretSealing.parseMasterKey(text)!)).toEqual(bytes)
    expect(Redacted.value(SecretSealing.parseMasterKey(Buffer.from(bytes).toString("base64"))!)).toEqual(bytes)
    expect(Redacted.value(SecretSealing.parseMasterKey(Buffer.from(bytes).toString("hex"))!)).toEqual(bytes)
    expect(SecretSealing.parseMasterKey("too short")).toBeUndefined()
    expect(SecretSealing.parseMasterKey(Buffer.alloc(31).toString("base64url"))).toBeUndefined()
  })

  it.effect("the store holds only sealed seeds; they sign verifiably", () =>
    Effect.gen(function*() {
      const store = yield* freshStore
      expect(yield* signsVerifiably.pipe(Effect.provide(keysOver(store, { masterKey: masterKey(1) })))).toBe(true)
      const [key] = yield* storedKeys(store)
      expect(SecretSealing.isSealed(key!.secretKey)).toBe(true)
    }))

  it.effect("keys stored in the clear are sealed at start and keep signing", () =>
    Effect.gen(function*() {
      const store = yield* freshStore
      // A start without a master key stores the seed in hex, as before sealing existed.
      expect(yield* signsVerifiably.pipe(Effect.provide(keysOver(store)))).toBe(true)
      const [plain] = yield* storedKeys(store)
      expect(plain!.secretKey).toMatch(/^[0-9a-f]{64}$/)
      expect(yield* signsVerifiably.pipe(Effect.provide(keysOver(store, { masterKey: masterKey(1) })))).toBe(true)
      const [sealed] = yield* storedKeys(store)
      expect(sealed!.kid).toBe(plain!.kid)
      expect(SecretSealing.isSealed(sealed!.secretKey)).toBe(true)
      expect(sealed!.secretKey).not.toContain(plain!.secretKey)
    }))

  it.effect("a start with the wrong master key is refused, naming the setting", () =>
    Effect.gen(function*() {
      const store = yield* freshStore
      yield* signsVerifiably.pipe(Effect.provide(keysOver(store, { masterKey: masterKey(1) })))
      const wrong = yield* Effect.exit(
        signsVerifiably.pipe(Effect.provide(keysOver(store, { masterKey: masterKey(2) })))
      )
      expect(wrong).toMatchObject({ _tag: "Failure" })
      expect(String(Exit.isFailure(wrong) ? wrong.cause : "")).toContain("masterKey")
      const none = yield* Effect.exit(signsVerifiably.pipe(Effect.provide(keysOver(store))))
      expect(String(Exit.isFailure(none) ? none.cause : "")).toContain("no master key is configured")
    }))

  it.effect("keys sealed with a previous master key are sealed again with the new one", () =>
    Effect.gen(function*() {
      const store = yield* freshStore
      yield* signsVerifiably.pipe(Effect.provide(keysOver(store, { masterKey: masterKey(1) })))
      const config = { masterKey: masterKey(2), previousMasterKeys: [masterKey(1)] }
      expect(yield* signsVerifiably.pipe(Effect.provide(keysOver(store, config)))).toBe(true)
      // The old master key is no longer needed.
      expect(yield* signsVerifiably.pipe(Effect.provide(keysOver(store, { masterKey: masterKey(2) })))).toBe(true)
    }))

  it.effect("a next master key opens what it sealed, which is left as it is; a previous key's is sealed again", () =>
    Effect.gen(function*() {
      const secret = new Uint8Array(32).fill(7)
      const byNew = yield* (yield* SecretSealing.make(masterKey(2))).seal(secret, "kid-a")
      const byOld = yield* (yield* SecretSealing.make(masterKey(1))).seal(secret, "kid-a")
      // Phase 1 of a change: the old key seals, the new one only opens.
      const learning = yield* SecretSealing.make(masterKey(1), [], [masterKey(2)])
      expect(yield* learning.open(byNew, "kid-a")).toEqual({ secret, current: true, by: "next" })
      expect(yield* learning.open(byOld, "kid-a")).toEqual({ secret, current: true, by: "current" })
      expect((yield* learning.open(yield* learning.seal(secret, "kid-a"), "kid-a")).by).toBe("current")
      // Phase 2: the new key seals, the old one opens and asks to be sealed again.
      const switched = yield* SecretSealing.make(masterKey(2), [masterKey(1)])
      expect(yield* switched.open(byOld, "kid-a")).toEqual({ secret, current: false, by: "previous" })
      // A signing key sealed with the new key is left as it is by a process of phase 1, which signs with it.
      const store = yield* freshStore
      yield* signsVerifiably.pipe(Effect.provide(keysOver(store, { masterKey: masterKey(2) })))
      const [sealed] = yield* storedKeys(store)
      const phase1 = { masterKey: masterKey(1), nextMasterKeys: [masterKey(2)] }
      expect(yield* signsVerifiably.pipe(Effect.provide(keysOver(store, phase1)))).toBe(true)
      expect((yield* storedKeys(store))[0]!.secretKey).toBe(sealed!.secretKey)
      // Without the next key, the old key alone cannot open it: what phase 1 is for.
      const alone = yield* Effect.exit(
        signsVerifiably.pipe(Effect.provide(keysOver(store, { masterKey: masterKey(1) })))
      )
      expect(Exit.isFailure(alone)).toBe(true)
    }))

  it.effect("rotation seals the new key and every stored key again", () =>
    Effect.gen(function*() {
      const store = yield* freshStore
      yield* Effect.gen(function*() {
        yield* signsVerifiably
        const [before] = yield* storedKeys(store)
        yield* SigningKeys.rotate
        const after = yield* storedKeys(store)
        expect(after).toHaveLength(2)
        expect(after.every((k) => SecretSealing.isSealed(k.secretKey))).toBe(true)
        expect(after[0]!.kid).toBe(before!.kid)
        expect(after[0]!.secretKey).not.toBe(before!.secretKey)
        expect(yield* signsVerifiably).toBe(true)
      }).pipe(Effect.provide(keysOver(store, { masterKey: masterKey(1) })))
    }))

  it.effect("a master key of another length is an invalid setting", () =>
    Effect.gen(function*() {
      const exit = yield* Effect.exit(
        Layer.build(AppexecConfig.AppexecConfig.layer({ masterKey: Redacted.make(new Uint8Array(16)) })).pipe(
          Effect.scoped
        )
      )
      expect(String(Exit.isFailure(exit) ? exit.cause : "")).toContain("masterKey")
    }))
})
