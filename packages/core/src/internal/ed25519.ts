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
