/**
 * API keys (docs/api.md#authentication, docs/api.md): `<prefix><random>`, stored only as a SHA-256 hash, taken from
 * `x-api-key` or `Authorization: Bearer`.
 */
import { sha256Hex } from "./hash.js"

/** Random bytes in a key: 32 bytes, 43 base64url characters. */
export const KEY_RANDOM_BYTES = 32

/** The hash under which a key is stored and looked up. */
export const hashKey = (key: string): string => sha256Hex(key)

/** The non-secret hint kept with a key: the prefix and the first 6 random characters. */
export const hintOf = (key: string, prefix: string): string => key.slice(0, prefix.length + 6)

/** True when `key` has the configured prefix followed by 43 base64url characters. */
export const isWellFormed = (key: string, prefix: string): boolean =>
  key.startsWith(prefix) && /^[A-Za-z0-9_-]{43}$/.test(key.slice(prefix.length))

/**
 * The credential a request carries: `x-api-key`, else an `Authorization: Bearer` token.
 * `undefined` when neither is present; a non-Bearer Authorization yields the empty string (malformed).
 */
export const credentialFrom = (headers: {
  readonly "x-api-key"?: string | undefined
  readonly authorization?: string | undefined
}): string | undefined => {
  const direct = headers["x-api-key"]
  if (direct !== undefined) return direct.trim()
  const authorization = headers.authorization
  if (authorization === undefined) return undefined
  const match = /^Bearer\s+(\S+)\s*$/i.exec(authorization)
  return match === null ? "" : match[1]
}
