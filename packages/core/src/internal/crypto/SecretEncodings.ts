/**
 * The texts in which a secret value commonly travels, for the redactor to find it in any of them:
 * as sent; JSON-string-escaped (also with non-ASCII as `\uXXXX` and `/` as `\/`); URL-encoded
 * (`encodeURIComponent`, lower-case hex, form encoding); base64 and base64url of its UTF-8 bytes,
 * at each of the three alignments it can have inside a longer encoded text (so that the base64
 * of `user:secret` in a `Basic` header, or of `Bearer secret`, is found too); and, when the value
 * is itself a `Basic` credential (the base64 of `user:password`), the credential and password it
 * stands for. No Node module: base64 through `btoa`/`atob`.
 */

/** The shortest base64 piece that is looked for: shorter ones would mask ordinary text. */
const MIN_PIECE = 8

const encoder = new TextEncoder()
const decoder = new TextDecoder("utf-8", { fatal: true })

/** The standard base64 (with padding) of `bytes`. */
export const base64Of = (bytes: Uint8Array): string => {
  let binary = ""
  for (let i = 0; i < bytes.length; i += 0x8000) {
    binary += String.fromCharCode(...bytes.subarray(i, i + 0x8000))
  }
  return btoa(binary)
}

/** `base64` in the URL-safe alphabet, without padding. */
export const base64UrlOf = (base64: string): string =>
  base64.replaceAll("+", "-").replaceAll("/", "_").replace(/=+$/, "")

/** Lower-case hex of `bytes`. */
export const hexOf = (bytes: Uint8Array): string => {
  let out = ""
  for (const byte of bytes) out += byte.toString(16).padStart(2, "0")
  return out
}

/**
 * The base64 pieces that encode `bytes` whatever precedes or follows them: for `k` of 0, 1 and 2
 * bytes before them, the characters whose six bits all come from `bytes` (a character that mixes
 * in bits of what precedes or follows is left out, so at most ten bits of the value's first and
 * last bytes can stay readable around the mask).
 */
const alignedPieces = (bytes: Uint8Array): Array<string> => {
  const pieces: Array<string> = []
  for (let k = 0; k < 3; k++) {
    const shifted = new Uint8Array(k + bytes.length)
    shifted.set(bytes, k)
    const full = base64Of(shifted)
    const length = k + bytes.length
    const rest = length % 3
    // Characters 2 and 3 of a group hold bits of its second and third bytes only; character 3 of its third.
    const start = k === 0 ? 0 : k === 1 ? 2 : 3
    // Of a last group of one byte, its first character is that byte's; of two bytes, the first two.
    const end = 4 * Math.floor(length / 3) + rest
    const piece = full.slice(start, end)
    if (piece.length >= MIN_PIECE) pieces.push(piece)
  }
  return pieces
}

/** `text` with its non-ASCII characters written as JSON `\uXXXX` escapes in `hexCase`. */
const asciiEscaped = (text: string, upper: boolean): string =>
  text.replace(/[^\x20-\x7e]/g, (c) => {
    const hex = c.charCodeAt(0).toString(16).padStart(4, "0")
    return `\\u${upper ? hex.toUpperCase() : hex}`
  })

/** The credential a `Basic` value stands for (`user:password`) and its password, when it is one. */
export const basicCredentials = (value: string): ReadonlyArray<string> => {
  if (value.length % 4 !== 0 || !/^[A-Za-z0-9+/]+={0,2}$/.test(value)) return []
  let decoded: string
  try {
    decoded = decoder.decode(Uint8Array.from(atob(value), (c) => c.charCodeAt(0)))
  } catch {
    return []
  }
  const colon = decoded.indexOf(":")
  if (colon < 0 || !/^[\x20-\x7e]+$/.test(decoded)) return []
  return [decoded, decoded.slice(colon + 1)]
}

/** `encodeURIComponent(value)`, or undefined for a value that has none (a lone surrogate). */
const urlEncoded = (value: string): string | undefined => {
  try {
    return encodeURIComponent(value)
  } catch {
    return undefined
  }
}

/** Every text in which `value` is looked for (`value` first), without repeats. */
export const encodingsOf = (value: string): ReadonlyArray<string> => {
  const out = new Set<string>([value])
  const json = JSON.stringify(value).slice(1, -1)
  out.add(json)
  out.add(asciiEscaped(json, false))
  out.add(asciiEscaped(json, true))
  out.add(json.replaceAll("/", "\\/"))
  // A value with a lone surrogate has no URL encoding (`encodeURIComponent` throws): none is sent.
  const url = urlEncoded(value)
  if (url !== undefined) {
    out.add(url)
    out.add(url.replace(/%[0-9A-F]{2}/g, (e) => e.toLowerCase()))
    out.add(new URLSearchParams([["", value]]).toString().slice(1))
    out.add(url.replaceAll("%20", "+"))
  }
  const bytes = encoder.encode(value)
  const base64 = base64Of(bytes)
  out.add(base64)
  out.add(base64UrlOf(base64))
  for (const piece of alignedPieces(bytes)) {
    out.add(piece)
    out.add(base64UrlOf(piece))
  }
  return [...out]
}

/** Every text in which key bytes are looked for: base64, base64url and hex (both cases). */
export const byteEncodingsOf = (bytes: Uint8Array): ReadonlyArray<string> => {
  const base64 = base64Of(bytes)
  const hex = hexOf(bytes)
  return [...new Set([base64, base64.replace(/=+$/, ""), base64UrlOf(base64), hex, hex.toUpperCase()])]
}
