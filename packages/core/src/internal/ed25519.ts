/**
 * `@noble/ed25519` with its synchronous SHA-512 wired to `node:crypto`. Every module that signs
 * or verifies imports noble through here, so the sync API is ready whichever module loads first.
 */
import * as ed from "@noble/ed25519"
import { createHash } from "node:crypto"

const sha512 = (message: Uint8Array): Uint8Array<ArrayBuffer> => new Uint8Array(createHash("sha512").update(message).digest())

if (ed.hashes.sha512 === undefined) ed.hashes.sha512 = sha512

/** The configured noble module. */
export { ed }

/** Lower-case hex of bytes. */
export const toHex = (bytes: Uint8Array): string => Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString("hex")

/** Bytes of a hex string; `undefined` unless it is well-formed hex of `length` bytes. */
export const fromHex = (hex: string, length: number): Uint8Array | undefined =>
  hex.length === length * 2 && /^[0-9a-fA-F]*$/.test(hex) ? new Uint8Array(Buffer.from(hex, "hex")) : undefined

/** Bytes of a base64url string; `undefined` unless it decodes to `length` bytes. */
export const fromBase64Url = (text: string, length: number): Uint8Array | undefined => {
  if (!/^[A-Za-z0-9_-]*$/.test(text)) return undefined
  const bytes = Buffer.from(text, "base64url")
  return bytes.length === length ? new Uint8Array(bytes) : undefined
}
