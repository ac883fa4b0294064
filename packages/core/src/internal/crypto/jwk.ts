/**
 * Ed25519 keys as JWKs: the public form published in the key set (with its RFC 7638 thumbprint
 * as `kid`), the private form (`d`) in which an operator may configure a key, and signing with a
 * stored key. Runtime-neutral (`@noble/ed25519`, `@noble/hashes`).
 */
import type { Jwk } from "@appexec/api/Jwk"
import { sha256 } from "@noble/hashes/sha2.js"
import { utf8ToBytes } from "@noble/hashes/utils.js"
import { Either, Schema } from "effect"
import { publicKeyText } from "../../WebhookSignature.js"
import { ed, fromBase64Url, fromHex, signWithCachedKey, toBase64Url, toHex } from "./ed25519.js"

/** A private Ed25519 JWK (RFC 8037) as an operator configures it; `x` is checked against `d`. */
export const PrivateJwk = Schema.Struct({
  kty: Schema.Literal("OKP"),
  crv: Schema.Literal("Ed25519"),
  d: Schema.String,
  x: Schema.optional(Schema.String),
  kid: Schema.optional(Schema.String)
})
export type PrivateJwk = typeof PrivateJwk.Type

/** The RFC 7638 thumbprint of an Ed25519 public key: base64url SHA-256 of `{"crv","kty","x"}` in that order. */
export const thumbprint = (x: string): string =>
  toBase64Url(sha256(utf8ToBytes(`{"crv":"Ed25519","kty":"OKP","x":"${x}"}`)))

/**
 * The published JWK of a public key given as hex: the interface's fields (docs/api.md#jwk), and
 * the same key as Standard Webhooks writes it (`whpk`: `whpk_` + base64 of the 32 raw bytes).
 */
export const publicJwk = (publicKeyHex: string): Jwk => {
  const raw = fromHex(publicKeyHex, 32) ?? new Uint8Array()
  const x = toBase64Url(raw)
  return { kty: "OKP", crv: "Ed25519", x, kid: thumbprint(x), use: "sig", alg: "EdDSA", whpk: publicKeyText(raw) }
}

/** The hex key pair of a private JWK, or why it is not a usable Ed25519 key. */
export const fromPrivateJwk = (
  jwk: PrivateJwk
): Either.Either<{ readonly secretKey: string; readonly publicKey: string; readonly kid: string }, string> => {
  const secret = fromBase64Url(jwk.d, 32)
  if (secret === undefined) return Either.left("`d` must be 32 bytes in base64url")
  return Either.flatMap(keyPairOf(secret), (pair) => {
    const x = toBase64Url(ed.getPublicKey(secret))
    if (jwk.x !== undefined && jwk.x !== x) return Either.left("`x` is not the public key of `d`")
    return Either.right({ ...pair, kid: thumbprint(x) })
  })
}

/** The hex key pair of a 32-byte secret key seed. */
export const keyPairOf = (
  secretKey: Uint8Array
): Either.Either<{ readonly secretKey: string; readonly publicKey: string }, string> =>
  Either.try({
    try: () => ({ secretKey: toHex(secretKey), publicKey: toHex(ed.getPublicKey(secretKey)) }),
    catch: (cause) => `not an Ed25519 secret key: ${String(cause)}`
  })

/** The public key (32 bytes) of a published JWK, when it is an Ed25519 key. */
export const publicKeyBytes = (
  jwk: { readonly kty?: unknown; readonly crv?: unknown; readonly x?: unknown }
): Uint8Array | undefined =>
  jwk.kty === "OKP" && jwk.crv === "Ed25519" && typeof jwk.x === "string" ? fromBase64Url(jwk.x, 32) : undefined

/** Hex Ed25519 signature of `message` with a 32-byte secret key seed given as hex. */
export const signHex = (message: Uint8Array, secretKeyHex: string): Either.Either<string, string> => {
  const secretKey = fromHex(secretKeyHex, 32)
  if (secretKey === undefined) return Either.left("the secret key is not 32 bytes of hex")
  return Either.try({
    try: () => toHex(signWithCachedKey(message, secretKey, secretKeyHex)),
    catch: (cause) => String(cause)
  })
}
