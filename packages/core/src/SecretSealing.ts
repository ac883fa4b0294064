/**
 * Secrets at rest: what the store holds of a secret (the webhook signing seed) is sealed with a
 * key-encryption key, the instance's master key, in AES-256-GCM through Web Crypto, so a copy
 * of the database alone reveals nothing. A sealed secret reads
 * `sealed:v1:<base64url nonce>:<base64url ciphertext and tag>`; the nonce is fresh for every
 * sealing and the secret's context (the signing key's `kid`) is authenticated with it, so a
 * sealed value moved to another row does not open.
 *
 * The master key is 32 bytes. Keys that sealed earlier secrets may be kept as previous keys: a
 * secret they open is sealed again with the current key. Keys that other processes are about to
 * seal with (the first phase of a change of master key) may be given as next keys: a secret they
 * open is used as it is, never sealed back with the current key.
 */
import { Effect, Encoding, Redacted, Schema } from "effect"

/** The prefix of a sealed secret. */
export const SEALED_PREFIX = "sealed:v1:"

/** Length of a master key, in bytes. */
export const MASTER_KEY_BYTES = 32

/** Length of the AES-GCM nonce, in bytes. */
const NONCE_BYTES = 12

/** A secret could not be sealed or opened (no master key opens it, or it is damaged). */
export class SealingError extends Schema.TaggedError<SealingError>()("SealingError", {
  reason: Schema.String
}) {
  override get message() {
    return this.reason
  }
}

/** Whether `stored` is a sealed secret (else it was stored before sealing, in the clear). */
export const isSealed = (stored: string): boolean => stored.startsWith(SEALED_PREFIX)

/** Which of the master keys opened a sealed secret. */
export type OpenedBy = "current" | "previous" | "next"

/** The master keys, imported once for Web Crypto: the current one seals, every one opens. */
export interface Sealer {
  /** Seals `secret` for `context`. */
  readonly seal: (secret: Uint8Array, context: string) => Effect.Effect<string, SealingError>
  /**
   * Opens a sealed secret of `context`; `by` says which key opened it, and `current` is false when
   * only a previous master key did (so it should be sealed again).
   */
  readonly open: (
    sealed: string,
    context: string
  ) => Effect.Effect<
    { readonly secret: Uint8Array; readonly current: boolean; readonly by: OpenedBy },
    SealingError
  >
}

const encoder = new TextEncoder()

/** A copy on a plain `ArrayBuffer`, as Web Crypto takes it. */
const own = (bytes: Uint8Array): Uint8Array<ArrayBuffer> => Uint8Array.from(bytes)

const importKey = (key: Redacted.Redacted<Uint8Array>) =>
  Effect.tryPromise({
    try: () =>
      globalThis.crypto.subtle.importKey("raw", own(Redacted.value(key)), "AES-GCM", false, ["encrypt", "decrypt"]),
    catch: () => new SealingError({ reason: `a master key must be ${MASTER_KEY_BYTES} bytes` })
  })

/** The sealer of `current` (which seals), `previous` and `next` master keys (which only open). */
export const make = (
  current: Redacted.Redacted<Uint8Array>,
  previous: ReadonlyArray<Redacted.Redacted<Uint8Array>> = [],
  next: ReadonlyArray<Redacted.Redacted<Uint8Array>> = []
): Effect.Effect<Sealer, SealingError> =>
  Effect.gen(function*() {
    for (const key of [current, ...previous, ...next]) {
      if (Redacted.value(key).length !== MASTER_KEY_BYTES) {
        return yield* new SealingError({ reason: `a master key must be ${MASTER_KEY_BYTES} bytes` })
      }
    }
    const sealing = yield* importKey(current)
    const opening: ReadonlyArray<readonly [CryptoKey, OpenedBy]> = [
      [sealing, "current"],
      ...(yield* Effect.forEach(previous, importKey)).map((key) => [key, "previous"] as const),
      ...(yield* Effect.forEach(next, importKey)).map((key) => [key, "next"] as const)
    ]

    const seal = (secret: Uint8Array, context: string) =>
      Effect.tryPromise({
        try: async () => {
          const nonce = globalThis.crypto.getRandomValues(new Uint8Array(NONCE_BYTES))
          const box = await globalThis.crypto.subtle.encrypt(
            { name: "AES-GCM", iv: nonce, additionalData: encoder.encode(context) },
            sealing,
            own(secret)
          )
          return `${SEALED_PREFIX}${Encoding.encodeBase64Url(nonce)}:${Encoding.encodeBase64Url(new Uint8Array(box))}`
        },
        catch: () => new SealingError({ reason: "the secret could not be sealed" })
      })

    const open = (sealed: string, context: string) =>
      Effect.gen(function*() {
        const [nonceText = "", boxText = ""] = sealed.slice(SEALED_PREFIX.length).split(":")
        const nonce = Encoding.decodeBase64Url(nonceText)
        const box = Encoding.decodeBase64Url(boxText)
        if (!isSealed(sealed) || nonce._tag === "Left" || box._tag === "Left" || nonce.right.length !== NONCE_BYTES) {
          return yield* new SealingError({ reason: `the sealed secret of ${context} is damaged` })
        }
        for (const [key, by] of opening) {
          const opened = yield* Effect.tryPromise(() =>
            globalThis.crypto.subtle.decrypt(
              { name: "AES-GCM", iv: own(nonce.right), additionalData: encoder.encode(context) },
              key,
              own(box.right)
            )
          ).pipe(Effect.option)
          if (opened._tag === "Some") return { secret: new Uint8Array(opened.value), current: by !== "previous", by }
        }
        return yield* new SealingError({
          reason: `the secret of ${context} was sealed with another master key than the ones given`
        })
      })

    return { seal, open }
  })

/** A master key from its text: 32 bytes as base64url or base64 (44 characters) or hex (64). */
export const parseMasterKey = (text: string): Redacted.Redacted<Uint8Array> | undefined => {
  const trimmed = text.trim()
  const decoded = /^[0-9a-fA-F]{64}$/.test(trimmed)
    ? Encoding.decodeHex(trimmed)
    : Encoding.decodeBase64Url(trimmed.replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, ""))
  return decoded._tag === "Right" && decoded.right.length === MASTER_KEY_BYTES
    ? Redacted.make(decoded.right)
    : undefined
}

/** The text form of a master key (base64url), as `parseMasterKey` reads it. */
export const formatMasterKey = (key: Redacted.Redacted<Uint8Array>): string =>
  Encoding.encodeBase64Url(Redacted.value(key))
