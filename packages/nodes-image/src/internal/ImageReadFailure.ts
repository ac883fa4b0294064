/**
 * What went wrong reading bytes as an image, in words a consumer can act on, from sharp's
 * message (libvips's loaders say `Input buffer has corrupt header:`, `vipspng: libpng read
 * error`, `VipsJpeg: premature end of JPEG image`) and the bytes' own signature: a truncated PNG
 * is "the PNG data is cut short or damaged", PNG's signature followed by something else is "its
 * bytes begin like a PNG image but are not a valid PNG". A failure that is not a reading one (an
 * encoder's, a pixel limit) has none: it keeps the words of the step that failed.
 */

/** The formats told by their first bytes, as a sentence names them. */
const signatures: ReadonlyArray<{ readonly name: string; readonly test: (b: Uint8Array) => boolean }> = [
  {
    name: "PNG",
    test: (b) => [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a].every((byte, i) => b[i] === byte)
  },
  { name: "JPEG", test: (b) => b[0] === 0xff && b[1] === 0xd8 && b[2] === 0xff },
  { name: "WebP", test: (b) => ascii(b, 0, 4) === "RIFF" && ascii(b, 8, 12) === "WEBP" },
  { name: "GIF", test: (b) => ascii(b, 0, 4) === "GIF8" },
  { name: "AVIF", test: (b) => ascii(b, 4, 8) === "ftyp" && /^avi[fs]$/.test(ascii(b, 8, 12)) },
  { name: "HEIF", test: (b) => ascii(b, 4, 8) === "ftyp" && /^(?:hei[cfsx]|mif1|msf1)$/.test(ascii(b, 8, 12)) }
]

/** The formats told by the loader a message names, when the bytes were not at hand. */
const loaders: ReadonlyArray<readonly [RegExp, string]> = [
  [/png/i, "PNG"],
  [/jpe?g/i, "JPEG"],
  [/webp/i, "WebP"],
  [/gif/i, "GIF"],
  [/heif|avif/i, "HEIF"]
]

const ascii = (bytes: Uint8Array, from: number, to: number) => String.fromCharCode(...bytes.subarray(from, to))

/** A message of a loader that met damaged or cut-off data. */
const DAMAGED =
  /premature end|truncated|libpng read error|unexpected end|not enough data|read error|end of (?:file|stream)|corrupt (?:data|jpeg)/i

/** A message of one of libvips's loaders (its name, or sharp's words for its input). */
const LOADER =
  /^(?:vipspng|vipsjpeg|pngload|jpegload|webpload|gifload|heifload|tiffload|input buffer|input file)|load_buffer|load_source/i

/** `name` with its article: "a PNG", "an AVIF". */
const withArticle = (name: string) => `${name === "AVIF" ? "an" : "a"} ${name}`

/**
 * Why `detail` (a sharp failure's message) says the image could not be read, in words; none when
 * it is not a failure to read. `bytes`, when given, are what was read: their signature names the
 * format they pose as.
 */
export const reasonOf = (detail: string, bytes?: Uint8Array): string | undefined => {
  const signed = bytes === undefined ? undefined : signatures.find((s) => s.test(bytes))
  const format = signed?.name ?? loaders.find(([pattern]) => pattern.test(detail))?.[1]
  if (/unsupported image format/i.test(detail)) return "its bytes are not an image in any format this instance reads"
  if (/corrupt header/i.test(detail)) {
    return signed === undefined
      ? `its header is damaged${format === undefined ? "" : ` (${withArticle(format)} image's)`}`
      : `its bytes begin like ${withArticle(signed.name)} image but are not a valid ${signed.name}`
  }
  if (DAMAGED.test(detail)) return `the ${format ?? "image"} data is cut short or damaged`
  if (LOADER.test(detail)) {
    return `${format === undefined ? "its bytes" : `the ${format} data`} could not be decoded (${detail})`
  }
  return undefined
}
