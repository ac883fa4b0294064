/**
 * API keys (docs/api.md#authentication, docs/api.md): `<prefix><random>`, stored only as a SHA-256 hash, taken from
 * `x-api-key` or `Authorization: Bearer`.
 */
import { sha256Hex } from "../crypto/hash.js"

/** Random bytes in a key: 32 bytes, 43 base64url characters. */
export const KEY_RANDOM_BYTES = 32

/** The hash under which a key is stored and looked up. */
export const hashKey = (key: string): string => sha256Hex(key)

/** The non-secret hint kept with a key: the prefix and the first 6 random characters. */
export const hintOf = (key: string, prefix: string): string => key.slice(0, prefix.length + 6)

/** Characters of a key's start and of its end that its shown hint has (`aex_Twbo…myLI`). */
export const SHOWN_CHARACTERS = 4

/** The last characters of a key, kept to show after its hint. */
export const tailOf = (key: string): string => key.slice(-SHOWN_CHARACTERS)

/**
 * A key as listings show it, as the console does: the prefix, the first 4 random characters, `…`
 * and the last 4 (`aex_Twbo…myLI`); a key whose end is not known shows its stored hint and `…`.
 */
export const shownHint = (
  record: { readonly hint: string; readonly hintTail: string | null },
  prefix: string
): string =>
  record.hintTail === null
    ? `${record.hint}…`
    : `${record.hint.slice(0, prefix.length + SHOWN_CHARACTERS)}…${record.hintTail}`

/** What `keys revoke` was given, read: a whole key, a shown hint, or else an id or stored hint. */
export type RevokeTarget =
  | { readonly _tag: "Key"; readonly key: string }
  | { readonly _tag: "Shown"; readonly start: string; readonly tail: string }
  | { readonly _tag: "IdOrHint"; readonly value: string }

/**
 * Reads what identifies the keys to revoke: a whole key, a hint as shown (`aex_Twbo…myLI`, `...`
 * for `…` too), a stored hint with or without its `…` (`aex_Twbo12`), or an id.
 */
export const revokeTarget = (text: string, prefix: string): RevokeTarget => {
  const given = text.trim().replace(/\.\.\.|\u2026/g, "…")
  if (isWellFormed(given, prefix)) return { _tag: "Key", key: given }
  if (given.startsWith(prefix)) {
    const rest = given.slice(prefix.length)
    const shown = /^([A-Za-z0-9_-]{4})…([A-Za-z0-9_-]{4})$/.exec(rest)
    if (shown !== null) return { _tag: "Shown", start: `${prefix}${shown[1]}`, tail: shown[2]! }
    if (/^[A-Za-z0-9_-]{6}…$/.test(rest)) return { _tag: "IdOrHint", value: given.slice(0, -1) }
  }
  return { _tag: "IdOrHint", value: given }
}

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
