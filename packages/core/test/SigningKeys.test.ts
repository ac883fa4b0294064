import { AppexecConfig, IdGenerator, SigningKeys, SigningKeyStore, WebhookSignature } from "@appexec/core"
import { MemorySigningKeyStore, SeededIds } from "@appexec/testing"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Layer, Logger, LogLevel, TestClock } from "effect"
import { createHash, createPublicKey, generateKeyPairSync, verify } from "node:crypto"

const DAY = 24 * 60 * 60_000

/** Keys over `store`, so that two "starts" can share one store. */
const keysOver = (
  store: Layer.Layer<SigningKeyStore.SigningKeyStore>,
  config: Partial<AppexecConfig.AppexecOptions> = {}
) =>
  SigningKeys.layer.pipe(
    Layer.provide(Layer.mergeAll(store, SeededIds.layer("keys"), AppexecConfig.AppexecConfig.layer(config)))
  )

const keySet = Effect.flatMap(SigningKeys.SigningKeys, (k) => k.keySet)

/** RFC 7638, computed here independently of appexec. */
const rfc7638 = (x: string) =>
  createHash("sha256").update(JSON.stringify({ crv: "Ed25519", kty: "OKP", x })).digest("base64url")

describe("signing keys", () => {
  it.effect("a key is generated on first start, persisted, and reused by the next start", () =>
    Effect.gen(function*() {
      const store = Layer.succeed(SigningKeyStore.SigningKeyStore, yield* MemorySigningKeyStore.make)
      const first = yield* keySet.pipe(Effect.provide(keysOver(store)))
      expect(first.keys).toHaveLength(1)
      const jwk = first.keys[0]!
      expect(jwk).toMatchObject({ kty: "OKP", crv: "Ed25519", use: "sig", alg: "EdDSA" })
      expect(jwk.kid).toBe(rfc7638(jwk.x))
      const stored = yield* Effect.flatMap(SigningKeyStore.SigningKeyStore, (s) => s.list).pipe(Effect.provide(store))
      expect(stored.map((k) => k.kid)).toEqual([jwk.kid])
      const second = yield* keySet.pipe(Effect.provide(keysOver(store)))
      expect(second).toEqual(first)
    }))

  it.effect("without a master key, a key generated or found in the clear is warned of, naming the setting and how to make one", () =>
    Effect.gen(function*() {
      const warnings: Array<string> = []
      const capture = Logger.replace(
        Logger.defaultLogger,
        Logger.make(({ logLevel, message }) => {
          if (logLevel === LogLevel.Warning) warnings.push(String(Array.isArray(message) ? message.join(" ") : message))
        })
      )
      const store = Layer.succeed(SigningKeyStore.SigningKeyStore, yield* MemorySigningKeyStore.make)
      yield* keySet.pipe(Effect.provide(keysOver(store)), Effect.provide(capture))
      yield* keySet.pipe(Effect.provide(keysOver(store)), Effect.provide(capture))
      expect(warnings).toEqual([SigningKeys.CLEAR_KEYS_WARNING, SigningKeys.CLEAR_KEYS_WARNING])
      expect(SigningKeys.CLEAR_KEYS_WARNING).toMatch(/config\.masterKey.*APPEXEC_MASTER_KEY/)
      expect(SigningKeys.CLEAR_KEYS_WARNING).toContain("openssl rand -base64 32")
    }))

  it.effect("signatures verify with node:crypto against the published JWK", () =>
    Effect.gen(function*() {
      const keys = yield* SigningKeys.SigningKeys
      const message = WebhookSignature.signedMessage("1800000000", "{\"data\":{}}")
      const { kid, signature } = yield* keys.sign(message)
      const jwk = (yield* keys.keySet).keys[0]!
      expect(kid).toBe(jwk.kid)
      const publicKey = createPublicKey({ key: { kty: jwk.kty, crv: jwk.crv, x: jwk.x }, format: "jwk" })
      expect(verify(null, message, publicKey, Buffer.from(signature, "hex"))).toBe(true)
      expect(
        verify(
          null,
          WebhookSignature.signedMessage("1800000001", "{\"data\":{}}"),
          publicKey,
          Buffer.from(signature, "hex")
        )
      ).toBe(false)
    }).pipe(Effect.provide(keysOver(MemorySigningKeyStore.layer))))

  it.effect("rotation signs with a new key, keeps the old one published for the grace period, then drops it", () =>
    Effect.gen(function*() {
      const keys = yield* SigningKeys.SigningKeys
      const before = (yield* keys.keySet).keys[0]!
      yield* TestClock.adjust(DAY)
      const rotated = yield* SigningKeys.rotate
      expect(rotated.kid).not.toBe(before.kid)
      expect((yield* keys.sign(new Uint8Array([1]))).kid).toBe(rotated.kid)
      expect((yield* keys.keySet).keys.map((k) => k.kid)).toEqual([rotated.kid, before.kid])
      yield* TestClock.adjust(7 * DAY - 1)
      expect((yield* keys.keySet).keys.map((k) => k.kid)).toEqual([rotated.kid, before.kid])
      yield* TestClock.adjust(1)
      expect((yield* keys.keySet).keys.map((k) => k.kid)).toEqual([rotated.kid])
    }).pipe(Effect.provide(keysOver(MemorySigningKeyStore.layer))))

  it.effect("the grace period is configurable", () =>
    Effect.gen(function*() {
      const before = (yield* keySet).keys[0]!
      const rotated = yield* SigningKeys.rotate
      expect((yield* keySet).keys.map((k) => k.kid)).toEqual([rotated.kid, before.kid])
      yield* TestClock.adjust("1 hour")
      expect((yield* keySet).keys.map((k) => k.kid)).toEqual([rotated.kid])
    }).pipe(Effect.provide(keysOver(MemorySigningKeyStore.layer, { signingKeyGrace: 60 * 60_000 }))))

  it.effect("a rotation made by another process signs here within SIGNING_KEY_CACHE_MS, not before", () =>
    Effect.gen(function*() {
      const store = Layer.succeed(SigningKeyStore.SigningKeyStore, yield* MemorySigningKeyStore.make)
      const server = yield* Effect.provide(SigningKeys.SigningKeys, keysOver(store))
      const message = new Uint8Array([1, 2, 3])
      const before = (yield* server.sign(message)).kid
      const rotated = yield* SigningKeys.rotate.pipe(
        Effect.provide(
          SigningKeys.layer.pipe(
            Layer.provide(Layer.mergeAll(store, SeededIds.layer("other"), AppexecConfig.AppexecConfig.layer({})))
          )
        )
      )
      expect(rotated.kid).not.toBe(before)
      // A burst of deliveries reads the store once: the old key still signs (and is still published).
      expect((yield* server.sign(message)).kid).toBe(before)
      yield* TestClock.adjust(SigningKeys.SIGNING_KEY_CACHE_MS)
      expect((yield* server.sign(message)).kid).toBe(rotated.kid)
    }))

  it.effect("the grace period of the rotating process holds for a publisher configured otherwise", () =>
    Effect.gen(function*() {
      const store = Layer.succeed(SigningKeyStore.SigningKeyStore, yield* MemorySigningKeyStore.make)
      const before = (yield* keySet.pipe(Effect.provide(keysOver(store)))).keys[0]!
      // `appexec signing-key rotate --grace 1h` while `serve` runs with the default 7 days.
      const rotating = SigningKeys.layer.pipe(
        Layer.provide(
          Layer.mergeAll(
            store,
            SeededIds.layer("rotate"),
            AppexecConfig.AppexecConfig.layer({ signingKeyGrace: 60 * 60_000 })
          )
        )
      )
      const rotated = yield* SigningKeys.rotate.pipe(Effect.provide(rotating))
      const server = keysOver(store)
      expect((yield* keySet.pipe(Effect.provide(server))).keys.map((k) => k.kid)).toEqual([rotated.kid, before.kid])
      yield* TestClock.adjust("1 hour")
      expect((yield* keySet.pipe(Effect.provide(server))).keys.map((k) => k.kid)).toEqual([rotated.kid])
    }))

  it.effect("a key given in config as a JWK signs, and is imported once: a later rotation survives a restart", () =>
    Effect.gen(function*() {
      const { privateKey, publicKey } = generateKeyPairSync("ed25519")
      const jwk = privateKey.export({ format: "jwk" }) as { kty: "OKP"; crv: "Ed25519"; d: string; x: string }
      const config = { signingKeyJwk: { kty: jwk.kty, crv: jwk.crv, d: jwk.d, x: jwk.x } }
      const store = Layer.succeed(SigningKeyStore.SigningKeyStore, yield* MemorySigningKeyStore.make)

      const signed = yield* Effect.flatMap(SigningKeys.SigningKeys, (k) => k.sign(new Uint8Array([7]))).pipe(
        Effect.provide(keysOver(store, config))
      )
      expect(signed.kid).toBe(rfc7638(jwk.x))
      expect(verify(null, new Uint8Array([7]), publicKey, Buffer.from(signed.signature, "hex"))).toBe(true)

      const rotated = yield* SigningKeys.rotate.pipe(Effect.provide(keysOver(store, config)))
      const restarted = yield* keySet.pipe(Effect.provide(keysOver(store, config)))
      expect(restarted.keys.map((k) => k.kid)).toEqual([rotated.kid, rfc7638(jwk.x)])
    }))

  it("the configured JWK is checked: `x` must belong to `d`", () => {
    const a = generateKeyPairSync("ed25519").privateKey.export({ format: "jwk" })
    const b = generateKeyPairSync("ed25519").privateKey.export({ format: "jwk" })
    const result = SigningKeys.fromPrivateJwk({ kty: "OKP", crv: "Ed25519", d: a.d!, x: b.x! })
    expect(result._tag).toBe("Left")
    expect(SigningKeys.fromPrivateJwk({ kty: "OKP", crv: "Ed25519", d: "short" })._tag).toBe("Left")
  })

  it.effect("key material comes from the IdGenerator: the same seed gives the same key", () =>
    Effect.gen(function*() {
      const a = yield* keySet.pipe(Effect.provide(keysOver(MemorySigningKeyStore.layer)))
      const b = yield* keySet.pipe(Effect.provide(keysOver(MemorySigningKeyStore.layer)))
      expect(a).toEqual(b)
      const random = yield* keySet.pipe(
        Effect.provide(
          SigningKeys.layer.pipe(
            Layer.provide(
              Layer.mergeAll(
                MemorySigningKeyStore.layer,
                IdGenerator.IdGenerator.random,
                AppexecConfig.AppexecConfig.layer()
              )
            )
          )
        )
      )
      expect(random.keys[0]!.kid).not.toBe(a.keys[0]!.kid)
    }))
})
