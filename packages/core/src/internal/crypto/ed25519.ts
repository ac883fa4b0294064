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
/** The field prime. */
const P = 2n ** 255n - 19n

const hexByte = Array.from({ length: 256 }, (_, i) => i.toString(16).padStart(2, "0"))

/** The little-endian number of `bytes` (one hex parse instead of a shift per byte). */
const fromLittleEndian = (bytes: Uint8Array): bigint => {
  let hex = "0x"
  for (let i = bytes.length - 1; i >= 0; i--) hex += hexByte[bytes[i]!]
  return BigInt(hex)
}

/** The 32 little-endian bytes of `n` (below 2^256). */
const toLittleEndian32 = (n: bigint): Uint8Array => {
  const hex = n.toString(16).padStart(64, "0")
  const out = new Uint8Array(32)
  for (let i = 0; i < 32; i++) out[i] = Number.parseInt(hex.slice(62 - 2 * i, 64 - 2 * i), 16)
  return out
}

type ExtendedKey = ReturnType<typeof ed.utils.getExtendedPublicKey>
type Point = InstanceType<typeof ed.Point>

/** Expanded secret keys by their hex: the expansion costs a base-point multiplication. */
const expanded = new Map<string, ExtendedKey>()
const MAX_EXPANDED = 16

const expandedKey = (secretKey: Uint8Array, cacheKey: string): ExtendedKey => {
  let key = expanded.get(cacheKey)
  if (key === undefined) {
    key = ed.utils.getExtendedPublicKey(secretKey)
    if (expanded.size >= MAX_EXPANDED) expanded.delete(expanded.keys().next().value!)
    expanded.set(cacheKey, key)
  }
  return key
}

/**
 * The encodings of `points` (the bytes of `Point.toBytes`) with one field inversion for all of
 * them (Montgomery's trick) instead of one each.
 */
const encodeAll = (points: ReadonlyArray<Point>): Array<Uint8Array> => {
  const prefix: Array<bigint> = []
  let product = 1n
  for (const point of points) {
    prefix.push(product)
    product = ed.etc.mod(product * point.Z, P)
  }
  let inverse = ed.etc.invert(product, P)
  const out = new Array<Uint8Array>(points.length)
  for (let i = points.length - 1; i >= 0; i--) {
    const point = points[i]!
    const iz = ed.etc.mod(inverse * prefix[i]!, P)
    inverse = ed.etc.mod(inverse * point.Z, P)
    const bytes = toLittleEndian32(ed.etc.mod(point.Y * iz, P))
    if ((ed.etc.mod(point.X * iz, P) & 1n) === 1n) bytes[31]! |= 0x80
    out[i] = bytes
  }
  return out
}

/** One message to sign with a 32-byte secret key seed (`cacheKey` names the seed, e.g. its hex). */
export interface SigningRequest {
  readonly message: Uint8Array
  readonly secretKey: Uint8Array
  readonly cacheKey: string
}

/**
 * RFC 8032 Ed25519 signatures of many messages (the same bytes as `ed.sign` of each), each
 * secret key expanded once and kept (`ed.sign` expands the key, a second base-point
 * multiplication, on every call), and the points `R` encoded with one field inversion for the
 * whole batch. `hash` is the SHA-512 of the two per-signature hashes (default `@noble/hashes`;
 * a host may pass a native one).
 */
export const signAllWithCachedKeys = (
  requests: ReadonlyArray<SigningRequest>,
  hash: (bytes: Uint8Array) => Uint8Array = sha512
): Array<Uint8Array> => {
  const keys = requests.map((request) => expandedKey(request.secretKey, request.cacheKey))
  const rs = requests.map((request, i) =>
    ed.etc.mod(fromLittleEndian(hash(ed.etc.concatBytes(keys[i]!.prefix, request.message))), L)
  )
  const Rs = encodeAll(rs.map((r) => ed.Point.BASE.multiply(r)))
  return requests.map((request, i) => {
    const key = keys[i]!
    const R = Rs[i]!
    const k = ed.etc.mod(fromLittleEndian(hash(ed.etc.concatBytes(R, key.pointBytes, request.message))), L)
    const S = ed.etc.mod(rs[i]! + k * key.scalar, L)
    return ed.etc.concatBytes(R, toLittleEndian32(S))
  })
}

/** One signature (`signAllWithCachedKeys` of one message). */
export const signWithCachedKey = (
  message: Uint8Array,
  secretKey: Uint8Array,
  cacheKey: string,
  hash: (bytes: Uint8Array) => Uint8Array = sha512
): Uint8Array => signAllWithCachedKeys([{ message, secretKey, cacheKey }], hash)[0]!
