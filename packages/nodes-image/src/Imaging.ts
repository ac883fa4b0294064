/**
 * Image work on sharp, as Effects: decoding with a pixel bound, encoding to a chosen format, and
 * setting text (Pango, so long text wraps) on an image. sharp is loaded on first use. The image
 * nodes are written with it, and so are the video nodes (`@appexec/nodes-video`: frames drawn by
 * sharp) and any image node of a host's own.
 */
import { NodeType } from "@appexec/core"
import { Effect, Schema } from "effect"
import type { Metadata, Sharp } from "sharp"
import * as ImageReadFailure from "./internal/ImageReadFailure.js"
import { sharpModule } from "./internal/sharpModule.js"

/** Formats the image nodes write. */
export const ImageFormat = Schema.Literal("png", "jpeg", "webp", "avif")
export type ImageFormat = typeof ImageFormat.Type

/** The `Content-Type` of a format. */
export const contentTypeOf = (format: ImageFormat): string => `image/${format}`

/** What a failure to read an image begins with, whatever step met it. */
export const UNREADABLE = "the image could not be read"

/**
 * Runs a sharp promise; a sharp failure becomes a node failure. One that met bytes it could not
 * read (sharp decodes lazily, so an encoding step meets a truncated input too) says "the image
 * could not be read:" and why (`ImageReadFailure`; `source`, the bytes read, names the format they
 * pose as); any other begins with `what`.
 */
export const attempt = <A>(
  what: string,
  run: () => Promise<A>,
  source?: Uint8Array
): Effect.Effect<A, NodeType.NodeFailure> =>
  Effect.tryPromise({
    try: run,
    catch: (error) => {
      const detail = error instanceof Error ? error.message : String(error)
      if (/pixel limit/i.test(detail)) {
        return new NodeType.NodeFailure({ message: `${what}: the image has too many pixels` })
      }
      const unreadable = ImageReadFailure.reasonOf(detail, source)
      return new NodeType.NodeFailure({
        message: unreadable === undefined ? `${what}: ${detail}` : `${UNREADABLE}: ${unreadable}`
      })
    }
  })

/** A sharp pipeline over encoded image bytes, refusing images over `maxPixels`. */
export const open = (bytes: Uint8Array, maxPixels: number): Sharp =>
  sharpModule()(bytes, { limitInputPixels: maxPixels, failOn: "error" })

/** The format of decoded image metadata, when it is one the nodes write. */
export const formatFromMetadata = (meta: Metadata): ImageFormat | undefined => {
  switch (meta.format) {
    case "png":
    case "jpeg":
    case "webp":
      return meta.format
    case "heif":
      return meta.compression === "av1" ? "avif" : undefined
    default:
      return undefined
  }
}

/** The metadata of encoded image bytes; undecodable bytes and images over `maxPixels` fail. */
export const metadataOf = (bytes: Uint8Array, maxPixels: number): Effect.Effect<Metadata, NodeType.NodeFailure> =>
  attempt(UNREADABLE, () => open(bytes, maxPixels).metadata(), bytes).pipe(
    Effect.filterOrFail(
      (meta) => meta.width !== undefined && meta.height !== undefined && meta.width * meta.height <= maxPixels,
      () => new NodeType.NodeFailure({ message: `${UNREADABLE}: the image has too many pixels` })
    )
  )

/**
 * Encodes a pipeline as `format` (at `quality`, 1–100, where the format has one); `source`, the
 * bytes the pipeline reads, names their format when they turn out unreadable (`attempt`).
 */
export const encode = (
  pipeline: Sharp,
  format: ImageFormat,
  quality?: number,
  source?: Uint8Array
): Effect.Effect<NodeType.NodeValue, NodeType.NodeFailure> => {
  const q = quality === undefined ? {} : { quality }
  const encoded = format === "png"
    ? pipeline.png()
    : format === "jpeg"
    ? pipeline.jpeg({ mozjpeg: true, ...q })
    : format === "webp"
    ? pipeline.webp(q)
    : pipeline.avif(q)
  return attempt("the image could not be encoded", () => encoded.toBuffer(), source).pipe(
    Effect.map((buffer) => NodeType.NodeValue.media("image", contentTypeOf(format), new Uint8Array(buffer)))
  )
}

/** Longest text set on an image; longer text is cut with an ellipsis. */
export const MAX_TEXT = 600

const escapeMarkup = (text: string) =>
  text.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;").replace(/"/g, "&quot;").replace(
    /'/g,
    "&apos;"
  )

/** Text cut to `MAX_TEXT` characters (by code point) and stripped of control characters. */
export const clip = (text: string): string => {
  // eslint-disable-next-line no-control-regex
  const clean = text.replace(/[\u0000-\u0008\u000b-\u001f\u007f]/g, "").trim()
  const chars = [...clean]
  return chars.length <= MAX_TEXT ? clean : `${chars.slice(0, MAX_TEXT - 1).join("")}…`
}

/**
 * `text` rendered white with a soft dark shadow on a transparent background, wrapped to
 * `width` pixels, at `size` pixels, and shrunk if needed to fit `maxHeight`. Undefined for
 * text with nothing to draw.
 */
export const renderText = (
  text: string,
  options: { readonly width: number; readonly maxHeight: number; readonly size: number }
): Effect.Effect<
  { readonly png: Buffer; readonly width: number; readonly height: number } | undefined,
  NodeType.NodeFailure
> => {
  const clipped = clip(text)
  if (clipped === "") return Effect.succeed(undefined)
  const layer = (color: string, alpha: string) =>
    sharpModule()({
      text: {
        text: `<span foreground="${color}" fgalpha="${alpha}">${escapeMarkup(clipped)}</span>`,
        font: `sans Bold ${options.size}px`,
        width: Math.max(1, Math.floor(options.width)),
        align: "centre",
        wrap: "word-char",
        rgba: true,
        dpi: 72
      }
    })
      .png()
      .toBuffer({ resolveWithObject: true })
  return attempt("the text could not be drawn", async () => {
    const front = await layer("#ffffff", "100%")
    const shadow = await layer("#000000", "55%")
    const { width, height } = front.info
    const pad = Math.max(2, Math.round(options.size / 14))
    const combined = await sharpModule()({
      create: { width: width + pad, height: height + pad, channels: 4, background: { r: 0, g: 0, b: 0, alpha: 0 } }
    })
      .composite([
        { input: shadow.data, left: pad, top: pad },
        { input: front.data, left: 0, top: 0 }
      ])
      .png()
      .toBuffer({ resolveWithObject: true })
    const fits = combined.info.height <= options.maxHeight && combined.info.width <= options.width + pad
    const fitted = fits
      ? combined
      : await sharpModule()(combined.data)
        .resize({ width: Math.floor(options.width), height: Math.max(1, Math.floor(options.maxHeight)), fit: "inside" })
        .png()
        .toBuffer({ resolveWithObject: true })
    return { png: fitted.data, width: fitted.info.width, height: fitted.info.height }
  })
}
