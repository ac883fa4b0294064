/**
 * `@noble/ed25519` with its synchronous SHA-512 wired to `@noble/hashes`, and the byte encodings
 * keys travel in. Every module that signs or verifies imports noble through here, so the sync API
 * is ready whichever module loads first. Nothing here needs Node.
 */
import * as ed from "@noble/ed25519"
import { sha512 } from "@noble/hashes/sha2.js"
import { Either, Encoding } from "effect"

if (ed.hashes.sha512 === undefined) ed.hashes.sha512 = sha512

/** The configured noble module. */
export { ed }

/** Lower-case hex of bytes. */
export const toHex = (bytes: Uint8Array): string => Encoding.encodeHex(bytes)

/** Bytes of a hex string; `undefined` unless it is well-formed hex of `length` bytes. */
export const fromHex = (hex: string, length: number): Uint8Array | undefined =>
  hex.length === length * 2 ? Either.getOrUndefined(Encoding.decodeHex(hex)) : undefined

/** Base64url (no padding) of bytes. */
export const toBase64Url = (bytes: Uint8Array): string => Encoding.encodeBase64Url(bytes)

/** Bytes of a base64url string; `undefined` unless it decodes to `length` bytes. */
export const fromBase64Url = (text: string, length: number): Uint8Array | undefined => {
  if (!/^[A-Za-z0-9_-]*$/.test(text)) return undefined
  const bytes = Either.getOrUndefined(Encoding.decodeBase64Url(text))
  return bytes !== undefined && bytes.length === length ? bytes : undefined
}

/** The order of the Ed25519 base point. */
const L = 2n ** 252n + 27742317777372353535851937790883648493n

const fromLittleEndian = (bytes: Uint8Array): bigint => {
  let n = 0n
  for (let i = bytes.length - 1; i >= 0; i--) n = (n << 8n) | BigInt(bytes[i]!)
  return n
}

const toLittleEndian32 = (n: bigint): Uint8Array => {
  const out = new Uint8Array(32)
  for (let i = 0; i < 32; i++) {
    out[i] = Number(n & 255n)
    n >>= 8n
  }
  return out
}

type ExtendedKey = ReturnType<typeof ed.utils.getExtendedPublicKey>

/** Expanded secret keys by their hex: the expansion costs a base-point multiplication. */
const expanded = new Map<string, ExtendedKey>()
const MAX_EXPANDED = 16

/**
 * An RFC 8032 Ed25519 signature (the same bytes as `ed.sign`) with the secret key expanded once
 * and kept: `ed.sign` expands the key, a second base-point multiplication, on every call.
 * `hash` is the SHA-512 of the two per-signature hashes (default `@noble/hashes`; a host may pass
 * a native one).
 */
export const signWithCachedKey = (
  message: Uint8Array,
  secretKey: Uint8Array,
  cacheKey: string,
  hash: (bytes: Uint8Array) => Uint8Array = sha512
): Uint8Array => {
  let key = expanded.get(cacheKey)
  if (key === undefined) {
    key = ed.utils.getExtendedPublicKey(secretKey)
    if (expanded.size >= MAX_EXPANDED) expanded.delete(expanded.keys().next().value!)
    expanded.set(cacheKey, key)
  }
  const r = ed.etc.mod(fromLittleEndian(hash(ed.etc.concatBytes(key.prefix, message))), L)
  const R = ed.Point.BASE.multiply(r).toBytes()
  const k = ed.etc.mod(fromLittleEndian(hash(ed.etc.concatBytes(R, key.pointBytes, message))), L)
  const S = ed.etc.mod(r + k * key.scalar, L)
  return ed.etc.concatBytes(R, toLittleEndian32(S))
}
