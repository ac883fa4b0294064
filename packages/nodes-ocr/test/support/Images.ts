/**
 * Images made for the OCR tests with sharp: text set from SVG (DejaVu Sans, which the test
 * machines have), a photo-like picture with no text, and PNG bytes whose header claims a size
 * no test could decode.
 */
import { Effect } from "effect"
import { deflateSync } from "node:zlib"
import sharp from "sharp"

const escape = (text: string) => text.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;")

/** A PNG of `lines` in dark text on white, `size` pixels high, one line under the other. */
export const textImage = (
  lines: ReadonlyArray<string>,
  options: { readonly width: number; readonly height: number; readonly size: number }
) =>
  Effect.promise(() =>
    sharp(Buffer.from(
      `<svg xmlns="http://www.w3.org/2000/svg" width="${options.width}" height="${options.height}">` +
        `<rect width="100%" height="100%" fill="#ffffff"/>` +
        lines.map((line, i) =>
          `<text x="${Math.round(options.size)}" y="${Math.round(options.size * (2 + i * 1.6))}" ` +
          `font-family="DejaVu Sans" font-size="${options.size}" fill="#1a1a1a">${escape(line)}</text>`
        ).join("") +
        `</svg>`
    )).png().toBuffer().then((buffer) => new Uint8Array(buffer))
  )

/** A JPEG like a photograph and with no text: soft colour gradients, blurred noise and a few round shapes. */
export const photoImage = (width: number, height: number) =>
  Effect.promise(() => {
    const raw = Buffer.alloc(width * height * 3)
    let seed = 7
    const random = () => (seed = (seed * 1103515245 + 12345) % 2147483648) / 2147483648
    for (let y = 0; y < height; y++) {
      for (let x = 0; x < width; x++) {
        const i = (y * width + x) * 3
        raw[i] = 90 + 60 * Math.sin(x / 40) + 40 * random()
        raw[i + 1] = 120 + 50 * Math.cos(y / 55) + 40 * random()
        raw[i + 2] = 140 + 40 * Math.sin((x + y) / 70) + 40 * random()
      }
    }
    const shapes = Buffer.from(
      `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}">` +
        `<circle cx="${width * 0.3}" cy="${height * 0.4}" r="${width * 0.15}" fill="#2b4a1f" fill-opacity="0.7"/>` +
        `<ellipse cx="${width * 0.7}" cy="${height * 0.65}" rx="${width * 0.2}" ry="${
          height * 0.1
        }" fill="#d9c27a" fill-opacity="0.6"/>` +
        `</svg>`
    )
    return sharp(raw, { raw: { width, height, channels: 3 } })
      .blur(2)
      .composite([{ input: shapes }])
      .jpeg({ quality: 85 })
      .toBuffer()
      .then((buffer) => new Uint8Array(buffer))
  })

const crc32 = (bytes: Uint8Array) => {
  let crc = 0xffffffff
  for (const byte of bytes) {
    crc ^= byte
    for (let k = 0; k < 8; k++) crc = crc & 1 ? (crc >>> 1) ^ 0xedb88320 : crc >>> 1
  }
  return (crc ^ 0xffffffff) >>> 0
}

const chunk = (type: string, data: Uint8Array) => {
  const body = Buffer.concat([Buffer.from(type, "latin1"), data])
  const out = Buffer.alloc(4 + body.length + 4)
  out.writeUInt32BE(data.length, 0)
  body.copy(out, 4)
  out.writeUInt32BE(crc32(body), 4 + body.length)
  return out
}

/**
 * A PNG whose header says `width` × `height` (8-bit grey) followed by a few bytes of pixels: its
 * size can be read, its pixels could never be decoded (they are not there).
 */
export const hugeHeaderPng = (width: number, height: number): Uint8Array => {
  const header = Buffer.alloc(13)
  header.writeUInt32BE(width, 0)
  header.writeUInt32BE(height, 4)
  header.set([8, 0, 0, 0, 0], 8)
  return new Uint8Array(Buffer.concat([
    Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
    chunk("IHDR", header),
    chunk("IDAT", deflateSync(Buffer.alloc(64, 255))),
    chunk("IEND", new Uint8Array(0))
  ]))
}

/** The words of `text`, lower-cased, without punctuation. */
export const wordsOf = (text: string): ReadonlyArray<string> =>
  text.toLowerCase().replace(/[^\p{L}\p{N}\s]/gu, " ").split(/\s+/).filter((word) => word !== "")
