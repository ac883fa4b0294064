/**
 * Real images for tests, made and read by sharp: a test picture to serve or upload, and the
 * size and format of what a node made.
 */
import { Effect } from "effect"
import sharp from "sharp"

/** Width, height and format of encoded image bytes. */
export const describeImage = (bytes: Uint8Array) =>
  Effect.promise(async () => {
    const meta = await sharp(bytes).metadata()
    return {
      width: meta.width,
      height: meta.height,
      format: meta.format === "heif" && meta.compression === "av1" ? "avif" : meta.format
    }
  })

/** A test image: a `width` × `height` picture in `format`. */
export const testImage = (width: number, height: number, format: "png" | "jpeg" | "webp" = "png") =>
  Effect.promise(() =>
    sharp({ create: { width, height, channels: 3, background: { r: 200, g: 40, b: 90 } } })
      .toFormat(format)
      .toBuffer()
  )
