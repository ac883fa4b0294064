/**
 * The image as the OCR threads read it: its size checked from its header before anything is
 * decoded (an image over the pixel limit is refused without being decoded), then decoded by sharp
 * (on libuv's threads, off the event loop), turned upright by its EXIF orientation, laid on white
 * where it is transparent, and made grey. sharp is loaded on first use: a process that reads no
 * image never loads libvips.
 */
import { NodeType } from "@appexec/core"
import { Effect } from "effect"
import type Sharp from "sharp"
import type { GreyImage } from "../OcrPool.js"
import { packageRequire } from "./PackageRequire.js"

let loaded: typeof Sharp | undefined
const sharp = (): typeof Sharp => (loaded ??= packageRequire("sharp") as typeof Sharp)

/** A decoded image and what the execution's log says of it. */
export interface Decoded {
  readonly image: GreyImage
  /** The format read, as sharp names it (`png`, `jpeg`, `webp`…). */
  readonly format: string
}

const fail = (message: string) => new NodeType.NodeFailure({ message })

const detailOf = (error: unknown) => (error instanceof Error ? error.message : String(error)).replace(/\.$/, "")

const megapixels = (pixels: number) => `${+(pixels / 1_000_000).toFixed(1)} megapixels`

/** `bytes` decoded to grey levels, upright; refused from its header alone when over `maxPixels`. */
export const decode = (bytes: Uint8Array, maxPixels: number): Effect.Effect<Decoded, NodeType.NodeFailure> =>
  Effect.gen(function*() {
    const meta = yield* Effect.tryPromise({
      // The header alone is read: no limit is needed to read a size, and this one is checked below.
      try: () => sharp()(bytes, { limitInputPixels: false }).metadata(),
      catch: (error) => fail(`the image could not be read: ${detailOf(error)}`)
    })
    const { width, height } = meta
    if (width === undefined || height === undefined) return yield* fail("the image could not be read: it has no size")
    if (width * height > maxPixels) {
      return yield* fail(
        `the image is too large to read: ${width}×${height} is ${megapixels(width * height)}; ` +
          `text is read in images of up to ${megapixels(maxPixels)}`
      )
    }
    const { data, info } = yield* Effect.tryPromise({
      try: () =>
        sharp()(bytes, { limitInputPixels: maxPixels, failOn: "error" })
          .rotate()
          .flatten({ background: "#ffffff" })
          .toColourspace("b-w")
          .raw({ depth: "uchar" })
          .toBuffer({ resolveWithObject: true }),
      catch: (error) => fail(`the image could not be read: ${detailOf(error)}`)
    })
    return {
      image: {
        width: info.width,
        height: info.height,
        data: new Uint8Array(data.buffer, data.byteOffset, data.length)
      },
      format: meta.format
    }
  })
