/**
 * Media types told from the bytes (docs/api.md#uploads): the leading bytes ("magic numbers") of
 * the image, video and audio formats an upload may be, so that a declared `Content-Type` can be
 * checked against what the bytes are, and a file with no declared type (`appexec run --input
 * image=@photo.png`, the client's `upload`) gets its own. Pure: no I/O, runs wherever effect runs.
 */
import { Option } from "effect"

/** A kind of media, as a `url` parameter's `accept` names them. */
export type MediaKind = "image" | "video" | "audio"

/** A format the bytes were recognised as. */
export interface Sniffed {
  /** The canonical media type, e.g. `image/png`. */
  readonly contentType: string
  readonly kind: MediaKind
}

/** Every media type an upload may declare, canonical names first, for messages and documents. */
export const supported: ReadonlyArray<string> = [
  "image/png",
  "image/jpeg",
  "image/gif",
  "image/webp",
  "image/avif",
  "video/mp4",
  "video/quicktime",
  "video/webm",
  "audio/mpeg",
  "audio/wav",
  "audio/ogg",
  "audio/mp4",
  "audio/webm"
]

/** Other names in use for the same types (`image/jpg`, `audio/mp3`, …), mapped to the canonical ones. */
const aliases: Readonly<Record<string, string>> = {
  "image/jpg": "image/jpeg",
  "image/pjpeg": "image/jpeg",
  "audio/mp3": "audio/mpeg",
  "audio/x-wav": "audio/wav",
  "audio/wave": "audio/wav",
  "audio/vnd.wave": "audio/wav",
  "audio/x-m4a": "audio/mp4",
  "video/x-m4v": "video/mp4"
}

/** Types whose bytes cannot be told apart from another type's: a declared one of these is taken. */
const sameBytes: Readonly<Record<string, ReadonlyArray<string>>> = {
  // A WebM (Matroska) file and an MP4 (ISO BMFF) file hold video, audio or both alike.
  "video/webm": ["audio/webm"],
  "video/mp4": ["audio/mp4"],
  "audio/mp4": ["video/mp4"]
}

const ascii = (bytes: Uint8Array, at: number, text: string) => {
  if (bytes.length < at + text.length) return false
  for (let i = 0; i < text.length; i++) if (bytes[at + i] !== text.charCodeAt(i)) return false
  return true
}

const startsWith = (bytes: Uint8Array, prefix: ReadonlyArray<number>) =>
  bytes.length >= prefix.length && prefix.every((b, i) => bytes[i] === b)

/** The brands of an ISO BMFF `ftyp` box (the major brand and the compatible ones). */
const ftypBrands = (bytes: Uint8Array): ReadonlyArray<string> => {
  if (!ascii(bytes, 4, "ftyp") || bytes.length < 16) return []
  const size = Math.min(((bytes[0]! << 24) >>> 0) + (bytes[1]! << 16) + (bytes[2]! << 8) + bytes[3]!, bytes.length, 256)
  const brands: Array<string> = []
  for (let at = 8; at + 4 <= size; at += 4) {
    if (at === 12) continue // the minor version
    brands.push(String.fromCharCode(...bytes.subarray(at, at + 4)))
  }
  return brands
}

/** An ISO BMFF file (MP4, QuickTime, AVIF, M4A) by its brands. */
const isoMedia = (bytes: Uint8Array): Sniffed | undefined => {
  const brands = ftypBrands(bytes)
  if (brands.length === 0) return undefined
  const major = brands[0]!
  if (major === "avif" || major === "avis") return { contentType: "image/avif", kind: "image" }
  // HEIF stills and others are not among the formats an upload may be.
  if (major.startsWith("hei") || major.startsWith("mif") || major === "msf1") return undefined
  if (major === "qt  ") return { contentType: "video/quicktime", kind: "video" }
  if (major === "M4A " || major === "M4B ") return { contentType: "audio/mp4", kind: "audio" }
  return { contentType: "video/mp4", kind: "video" }
}

/** A Matroska/WebM file: the EBML header, with its `DocType` `webm` near the start. */
const webm = (bytes: Uint8Array): boolean => {
  if (!startsWith(bytes, [0x1a, 0x45, 0xdf, 0xa3])) return false
  const head = bytes.subarray(0, Math.min(bytes.length, 64))
  for (let i = 4; i + 4 <= head.length; i++) if (ascii(head, i, "webm")) return true
  return false
}

/** An MPEG audio frame header (layer III): 11 sync bits, a version and a layer that exist. */
const mpegFrame = (bytes: Uint8Array): boolean =>
  bytes.length >= 3 && bytes[0] === 0xff && (bytes[1]! & 0xe0) === 0xe0 && (bytes[1]! & 0x18) !== 0x08 &&
  (bytes[1]! & 0x06) === 0x02 && (bytes[2]! & 0xf0) !== 0xf0

/** What the bytes are, from their first bytes; none when they are no supported format. */
export const sniff = (bytes: Uint8Array): Option.Option<Sniffed> => {
  const found = ((): Sniffed | undefined => {
    if (startsWith(bytes, [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a])) {
      return { contentType: "image/png", kind: "image" }
    }
    if (startsWith(bytes, [0xff, 0xd8, 0xff])) return { contentType: "image/jpeg", kind: "image" }
    if (ascii(bytes, 0, "GIF87a") || ascii(bytes, 0, "GIF89a")) return { contentType: "image/gif", kind: "image" }
    if (ascii(bytes, 0, "RIFF") && ascii(bytes, 8, "WEBP")) return { contentType: "image/webp", kind: "image" }
    if (ascii(bytes, 0, "RIFF") && ascii(bytes, 8, "WAVE")) return { contentType: "audio/wav", kind: "audio" }
    if (ascii(bytes, 0, "OggS")) return { contentType: "audio/ogg", kind: "audio" }
    if (ascii(bytes, 0, "ID3") || mpegFrame(bytes)) return { contentType: "audio/mpeg", kind: "audio" }
    if (webm(bytes)) return { contentType: "video/webm", kind: "video" }
    return isoMedia(bytes)
  })()
  return Option.fromNullable(found)
}

/**
 * The canonical media type a `Content-Type` value names: its essence (before any `;`), in lower
 * case, with aliases (`image/jpg`, `audio/mp3`, …) replaced; none when empty.
 */
export const canonical = (contentType: string | undefined): Option.Option<string> => {
  const essence = (contentType ?? "").split(";")[0]!.trim().toLowerCase()
  return essence === "" ? Option.none() : Option.some(aliases[essence] ?? essence)
}

/** What checking a declared type against the bytes found. */
export type Check =
  | { readonly _tag: "Match"; readonly contentType: string; readonly kind: MediaKind }
  | { readonly _tag: "Unsupported"; readonly declared: string }
  | { readonly _tag: "Unrecognised"; readonly declared: string }
  | { readonly _tag: "Mismatch"; readonly declared: string; readonly actual: string }

/**
 * Checks that `bytes` are what `declared` says: a supported type whose bytes they have. The type
 * answered is the declared one (canonical), so audio in an MP4 or WebM file keeps its `audio/`.
 */
export const check = (declared: string, bytes: Uint8Array): Check => {
  const type = Option.getOrElse(canonical(declared), () => "")
  if (!supported.includes(type)) return { _tag: "Unsupported", declared: type }
  const found = sniff(bytes)
  if (Option.isNone(found)) return { _tag: "Unrecognised", declared: type }
  const actual = found.value.contentType
  if (actual === type) return { _tag: "Match", contentType: type, kind: found.value.kind }
  if (sameBytes[actual]?.includes(type)) {
    return { _tag: "Match", contentType: type, kind: type.startsWith("audio/") ? "audio" : "video" }
  }
  return { _tag: "Mismatch", declared: type, actual }
}
