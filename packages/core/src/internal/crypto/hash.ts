/**
 * Content hashing: SHA-256 over canonical JSON, and UUIDs derived from it. Runtime-neutral
 * (`@noble/hashes`), so the same ids come out in Node, browsers and edge workers.
 */
import { sha256 } from "@noble/hashes/sha2.js"
import { bytesToHex, utf8ToBytes } from "@noble/hashes/utils.js"

/** JSON with object keys sorted, so that equal content always gives equal text. */
export const canonicalJson = (value: unknown): string =>
  JSON.stringify(value, (_key, v: unknown) =>
    v !== null && typeof v === "object" && !Array.isArray(v)
      ? Object.fromEntries(
        Object.entries(v as Record<string, unknown>).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
      )
      : v)

/** Hex SHA-256 of a string (UTF-8). */
export const sha256Hex = (text: string): string => bytesToHex(sha256(utf8ToBytes(text)))

/** A UUID (version 8, RFC 9562 variant) derived from SHA-256 of `parts`: the same parts, the same id. */
export const uuidFromContent = (...parts: ReadonlyArray<string>): string => {
  const hex = sha256Hex(parts.join("\u0000"))
  const variant = ((parseInt(hex[16]!, 16) & 0x3) | 0x8).toString(16)
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-8${hex.slice(13, 16)}-${variant}${hex.slice(17, 20)}-${
    hex.slice(20, 32)
  }`
}
