/**
 * Webhook signing keys: the current Ed25519 key that signs, and the key set consumers verify
 * against (the current key plus keys retired within the grace period), as JWKs whose `kid` is
 * the RFC 7638 thumbprint.
 *
 * The live service (`layer`) works over the `SigningKeyStore` port. On first start it generates
 * a key (randomness from `IdGenerator`) and stores it, or imports the key the operator configured
 * as a private JWK (once: a later rotation is not undone by the next restart). Rotation stores a
 * new key and retires the others; a retired key stays published for the `signingKeyGrace` of the
 * process that rotated (stored with the key, so the rotating command's grace period holds for the
 * server that publishes). Every operation reads the store, so a rotation made by another process
 * (`appexec signing-key rotate`) takes effect at once.
 *
 * The seeds are sealed with the instance's master key (`masterKey`, see `SecretSealing`) before
 * they reach the store, whatever the store, so the store never holds one in the clear. At start
 * the keys stored before sealing (or sealed with a previous master key) are sealed with the
 * current one; a rotation seals every stored key again, each with a fresh nonce. Without a master
 * key, seeds are stored in the clear (for embedders that keep the store private).
 */
import type { Jwk, JwkSet } from "@appexec/api/Jwk"
import { Clock, Context, Effect, Either, Layer, Option, Schema } from "effect"
import { AppexecConfig, millis } from "./AppexecConfig.js"
import { InvalidConfiguration, StorageError } from "./Errors.js"
import { IdGenerator } from "./IdGenerator.js"
import { fromBase64Url, fromHex, toHex } from "./internal/crypto/ed25519.js"
import { fromPrivateJwk, keyPairOf, publicJwk } from "./internal/crypto/jwk.js"
import * as SecretSealing from "./SecretSealing.js"
import { type SigningKeyRecord, SigningKeyStore } from "./SigningKeyStore.js"
import * as StorageLock from "./StorageLock.js"
import { inThread, WebhookSigner } from "./WebhookSigner.js"

/**
 * What an instance without a master key warns at start while signing keys are stored in the
 * clear: the setting that seals them, and how to make a key.
 */
export const CLEAR_KEYS_WARNING =
  "signing keys are stored in the clear: give a master key to seal them, 32 random bytes such as " +
  "`openssl rand -base64 32` (`config.masterKey` of AppexecLayer.make, from SecretSealing.parseMasterKey; " +
  "APPEXEC_MASTER_KEY for the appexec command)"

export { fromPrivateJwk, PrivateJwk, publicJwk, publicKeyBytes, signHex, thumbprint } from "./internal/crypto/jwk.js"

/** The signing keys of an instance. */
export class SigningKeys extends Context.Tag("@appexec/core/SigningKeys")<
  SigningKeys,
  {
    /** The published key set (`GET /v1/webhooks/signing-key`). */
    readonly keySet: Effect.Effect<JwkSet, StorageError>
    /** Signs `message` with the current key; the signature is hex (docs/api.md#webhooks). */
    readonly sign: (
      message: Uint8Array
    ) => Effect.Effect<{ readonly kid: string; readonly signature: string }, StorageError>
    /**
     * Signs every message with the current key in one call of the `WebhookSigner` (the two
     * messages of a webhook attempt, `WebhookSignature.attemptMessages`); hex signatures in order.
     */
    readonly signAll: (
      messages: ReadonlyArray<Uint8Array>
    ) => Effect.Effect<{ readonly kid: string; readonly signatures: ReadonlyArray<string> }, StorageError>
    /** Makes a new key current; the previous one stays in the key set for the grace period. */
    readonly rotate: Effect.Effect<Jwk, StorageError>
  }
>() {}

/** A stored signing key could not be opened with the master keys given. */
class SealingFailure extends Schema.TaggedError<SealingFailure>()("SealingFailure", {
  kid: Schema.String,
  reason: Schema.String
}) {
  override get message() {
    return `signing key ${this.kid} cannot be opened: ${this.reason}`
  }
}

/** The key that signs: the newest unretired one (the later of equals in store order). */
export const currentOf = (keys: ReadonlyArray<SigningKeyRecord>): SigningKeyRecord | undefined =>
  keys.reduce<SigningKeyRecord | undefined>(
    (best, key) => (key.retiredAt === null && (best === undefined || key.createdAt >= best.createdAt) ? key : best),
    undefined
  )

/**
 * The published keys at `now`: the current key first, then retired keys still within their grace
 * period (until `publishedUntil`, else `graceMs` after `retiredAt`), newest first.
 */
export const publishedAt = (keys: ReadonlyArray<SigningKeyRecord>, now: number, graceMs: number): JwkSet => {
  const current = currentOf(keys)
  const others = keys
    .filter((k) => k !== current && (k.retiredAt === null || (k.publishedUntil ?? k.retiredAt + graceMs) > now))
    .sort((a, b) => b.createdAt - a.createdAt)
  return { keys: [...(current === undefined ? [] : [current]), ...others].map((k) => publicJwk(k.publicKey)) }
}

/** How long the key that signs is used before the store is read again (a rotation elsewhere). */
export const SIGNING_KEY_CACHE_MS = 250

/**
 * Builds the service; needs the store, an id generator (for key material) and the settings.
 * Signatures are made by the `WebhookSigner` in context, else on the calling thread.
 */
export const make = Effect.gen(function*() {
  const store = yield* SigningKeyStore
  const signer = Option.getOrElse(yield* Effect.serviceOption(WebhookSigner), () => inThread)
  const ids = yield* IdGenerator
  const config = yield* AppexecConfig
  const lock = yield* Effect.makeSemaphore(1)
  const sealer = config.masterKey === undefined
    ? undefined
    : yield* SecretSealing.make(config.masterKey, config.previousMasterKeys, config.nextMasterKeys).pipe(
      Effect.mapError((e) => new InvalidConfiguration({ setting: "masterKey", reason: e.reason }))
    )
  /** Hex seeds of the sealed values opened so far. */
  const opened = new Map<string, string>()

  /** What the store keeps of the hex seed of `kid`: sealed, or the hex itself without a master key. */
  const storedForm = (kid: string, secretHex: string) => {
    const seed = fromHex(secretHex, 32)
    if (sealer === undefined || seed === undefined) return Effect.succeed(secretHex)
    return sealer.seal(seed, kid).pipe(
      Effect.mapError((e) => new StorageError({ operation: "signingKeys.seal", cause: e.reason }))
    )
  }

  /** The hex seed of a stored key, and whether the current master key sealed it. */
  const openSecret = (key: SigningKeyRecord) =>
    Effect.gen(function*() {
      if (!SecretSealing.isSealed(key.secretKey)) return { secretHex: key.secretKey, current: false }
      if (sealer === undefined) {
        return yield* new SealingFailure({ kid: key.kid, reason: "it is sealed and no master key is configured" })
      }
      const { current, secret } = yield* sealer.open(key.secretKey, key.kid).pipe(
        Effect.mapError((e) => new SealingFailure({ kid: key.kid, reason: e.reason }))
      )
      return { secretHex: toHex(secret), current }
    })

  /** The hex seed of the key that signs (opened once per stored value). */
  const secretOf = (key: SigningKeyRecord) => {
    const known = opened.get(key.secretKey)
    if (known !== undefined) return Effect.succeed(known)
    return openSecret(key).pipe(
      Effect.map(({ secretHex }) => {
        opened.set(key.secretKey, secretHex)
        return secretHex
      }),
      Effect.mapError((e) => new StorageError({ operation: "signingKeys.open", cause: e.message }))
    )
  }

  /**
   * Seals what is not sealed with the current master key: keys stored before sealing, keys sealed
   * with a previous master key, and, when `fresh`, every key again (a rotation). A key that no
   * given master key opens fails the start when it signs, and is left as it is otherwise.
   */
  const sealStored = (fresh: boolean) =>
    Effect.gen(function*() {
      const keys = yield* store.list
      const signing = currentOf(keys)
      if (sealer === undefined) {
        if (keys.some((k) => !SecretSealing.isSealed(k.secretKey))) {
          yield* Effect.logWarning(CLEAR_KEYS_WARNING)
        }
        if (signing !== undefined && SecretSealing.isSealed(signing.secretKey)) {
          return yield* new InvalidConfiguration({
            setting: "masterKey",
            reason: `signing key ${signing.kid} is sealed and no master key is configured`
          })
        }
        return
      }
      for (const key of keys) {
        const secret = yield* Effect.either(openSecret(key))
        if (Either.isLeft(secret)) {
          if (key === signing) {
            return yield* new InvalidConfiguration({ setting: "masterKey", reason: secret.left.message })
          }
          yield* Effect.logWarning(`retired signing key ${key.kid} left as it is: ${secret.left.message}`)
          continue
        }
        const plain = !SecretSealing.isSealed(key.secretKey)
        if (!fresh && !plain && secret.right.current) continue
        yield* store.replaceSecret(key.kid, yield* storedForm(key.kid, secret.right.secretHex))
        if (plain) yield* Effect.logInfo(`signing key ${key.kid} sealed with the master key`)
        else if (!secret.right.current) yield* Effect.logInfo(`signing key ${key.kid} sealed with the new master key`)
      }
    })

  const generate = Effect.gen(function*() {
    const seed = fromBase64Url(yield* ids.token(32), 32)
    if (seed === undefined) return yield* Effect.dieMessage("IdGenerator.token(32) did not give 32 bytes")
    const pair = yield* Either.match(keyPairOf(seed), { onLeft: Effect.dieMessage, onRight: Effect.succeed })
    const kid = publicJwk(pair.publicKey).kid
    return { kid, ...pair, createdAt: yield* Clock.currentTimeMillis, retiredAt: null } satisfies SigningKeyRecord
  })

  /** Generates and stores the first key, unless another process did meanwhile. */
  const generateFirst = Effect.gen(function*() {
    const existing = currentOf(yield* store.list)
    if (existing !== undefined) return existing
    const generated = yield* generate
    yield* store.insert({ ...generated, secretKey: yield* storedForm(generated.kid, generated.secretKey) })
    // Read back: when two processes start at once, both converge on the newest key.
    const stored = currentOf(yield* store.list)
    if (stored === undefined) {
      return yield* new StorageError({ operation: "signingKeys.generate", cause: "no key after insert" })
    }
    yield* Effect.logInfo(`signing key ${stored.kid} generated`)
    if (sealer === undefined) yield* Effect.logWarning(CLEAR_KEYS_WARNING)
    return stored
  })

  /**
   * The current key, generating and storing one when the store has none: under the storage's
   * lock, so that processes starting together on a new database make one.
   */
  const current = lock.withPermits(1)(
    Effect.flatMap(store.list, (keys) => {
      const existing = currentOf(keys)
      return existing !== undefined
        ? Effect.succeed(existing)
        : StorageLock.withLock(StorageLock.BOOTSTRAP)(generateFirst)
    })
  )

  const importConfigured = Effect.gen(function*() {
    const jwk = config.signingKeyJwk
    if (jwk === undefined) return
    const pair = fromPrivateJwk(jwk)
    if (Either.isLeft(pair)) return yield* Effect.dieMessage(`The configured signing key is not usable: ${pair.left}`)
    const { kid, secretKey, publicKey } = pair.right
    if ((yield* store.list).some((k) => k.kid === kid)) return
    // Under the storage's lock: processes starting together import it once.
    yield* lock.withPermits(1)(
      StorageLock.withLock(StorageLock.BOOTSTRAP)(
        Effect.gen(function*() {
          if ((yield* store.list).some((k) => k.kid === kid)) return
          const at = yield* Clock.currentTimeMillis
          yield* store.insert({
            kid,
            secretKey: yield* storedForm(kid, secretKey),
            publicKey,
            createdAt: at,
            retiredAt: null
          })
          yield* store.retireAllBut(kid, at, at + millis(config.signingKeyGrace))
          yield* Effect.logInfo(`configured signing key ${kid} imported`)
        })
      )
    )
  })

  yield* importConfigured.pipe(
    Effect.zipRight(lock.withPermits(1)(sealStored(false))),
    Effect.zipRight(current),
    Effect.catchTag(
      "StorageError",
      (error) => Effect.logWarning("signing key not ready at start; it is created on first use", error)
    )
  )

  /**
   * The key that signs and its hex seed, as read at `until - SIGNING_KEY_CACHE_MS`: a burst of
   * deliveries reads the store once, and a rotation made by another process signs within
   * `SIGNING_KEY_CACHE_MS` (one made here, at once).
   */
  let signing: { readonly key: SigningKeyRecord; readonly secretHex: string; readonly until: number } | undefined
  /** Moved by every rotation here: a read begun before it does not put the old key back. */
  let rotations = 0
  const signingKey = Effect.flatMap(Clock.currentTimeMillis, (now) => {
    if (signing !== undefined && now < signing.until) return Effect.succeed(signing)
    const seen = rotations
    return Effect.flatMap(current, (key) =>
      Effect.map(secretOf(key), (secretHex) => {
        const read = { key, secretHex, until: now + SIGNING_KEY_CACHE_MS }
        if (seen === rotations) signing = read
        return read
      }))
  })

  const signAll = (messages: ReadonlyArray<Uint8Array>) =>
    Effect.flatMap(signingKey, ({ key, secretHex }) =>
      signer.sign(messages, secretHex).pipe(
        Effect.mapError((e) => new StorageError({ operation: "signingKeys.sign", cause: e.reason })),
        Effect.map((signatures) => ({ kid: key.kid, signatures }))
      ))

  const service: SigningKeys["Type"] = {
    keySet: Effect.gen(function*() {
      yield* current
      return publishedAt(yield* store.list, yield* Clock.currentTimeMillis, millis(config.signingKeyGrace))
    }),
    sign: (message) => Effect.map(signAll([message]), ({ kid, signatures }) => ({ kid, signature: signatures[0]! })),
    signAll,
    rotate: lock.withPermits(1)(
      Effect.gen(function*() {
        const key = yield* generate
        yield* store.insert({ ...key, secretKey: yield* storedForm(key.kid, key.secretKey) })
        signing = undefined
        rotations += 1
        yield* store.retireAllBut(key.kid, key.createdAt, key.createdAt + millis(config.signingKeyGrace))
        // Every stored key sealed again with the current master key, each with a fresh nonce.
        yield* sealStored(true).pipe(
          Effect.catchTag("InvalidConfiguration", (e) => Effect.logWarning(`keys not sealed again: ${e.message}`))
        )
        yield* Effect.logInfo(`signing key rotated: ${key.kid} signs from now on`)
        return publicJwk(key.publicKey) satisfies Jwk
      })
    )
  }
  return service
})

/** `SigningKeys` over the signing-key store. */
export const layer = Layer.effect(SigningKeys, make)

/** Rotates the signing key (what `appexec signing-key rotate` runs); returns the new public JWK. */
export const rotate = Effect.flatMap(SigningKeys, (keys) => keys.rotate)
