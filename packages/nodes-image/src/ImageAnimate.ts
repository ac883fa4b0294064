/**
 * `image.animate`: images, in the order of the definition's edges, become the frames of an
 * animated WebP or GIF, made by sharp alone (no ffmpeg). Every frame is drawn into one size: the
 * config's, else the first image's.
 */
import { NodeType } from "@appexec/core"
import { formatBytes, mediaOf } from "@appexec/nodes/Media"
import { NodesSettings } from "@appexec/nodes/NodesSettings"
import { Effect, Schema } from "effect"
import { attempt, metadataOf, open } from "./Imaging.js"
import { sharpModule } from "./internal/sharpModule.js"

const Side = Schema.Number.pipe(Schema.int(), Schema.between(1, 4096))

/** Most frames in one animation. */
export const MAX_FRAMES = 100

/** The config of `image.animate`. */
export const Config = Schema.Struct({
  /** Encoding (default webp). */
  format: Schema.optionalWith(Schema.Literal("webp", "gif"), { default: () => "webp" as const }),
  /** Milliseconds each frame is shown, 20–60000 (default 500). */
  delay: Schema.optionalWith(Schema.Number.pipe(Schema.int(), Schema.between(20, 60_000)), { default: () => 500 }),
  /** Times the animation plays, 0 for ever (default 0). */
  loop: Schema.optionalWith(Schema.Number.pipe(Schema.int(), Schema.between(0, 65_535)), { default: () => 0 }),
  /** Frame width (default: the first image's). */
  width: Schema.optional(Side),
  /** Frame height (default: the first image's). */
  height: Schema.optional(Side),
  /** An image of another shape is cropped to cover the frame, or fits inside it on transparency (default contain). */
  fit: Schema.optionalWith(Schema.Literal("cover", "contain"), { default: () => "contain" as const })
})

/** `image.animate`: images as the frames of an animated WebP or GIF. */
export const imageAnimate = NodeType.defineNode({
  type: "image.animate",
  description:
    "Makes an animated WebP or GIF of its images in edge order, each shown `delay` ms, looping `loop` times (0: for ever).",
  role: "process",
  inputs: { min: 1, max: MAX_FRAMES },
  config: Config,
  run: ({ config, log, upstream }) =>
    Effect.gen(function*() {
      const { media: limits } = yield* NodesSettings
      const images = yield* Effect.forEach(upstream, (value) => mediaOf(value, "image"))
      const first = yield* metadataOf(images[0]!.bytes, limits.maxPixels)
      // EXIF orientations 5–8 swap width and height once turned.
      const swapped = (first.orientation ?? 1) >= 5
      const width = config.width ?? (swapped ? first.height! : first.width!)
      const height = config.height ?? (swapped ? first.width! : first.height!)
      if (width * height * images.length > limits.maxPixels) {
        return yield* new NodeType.NodeFailure({
          message:
            `the animation would be too large: ${images.length} frames of ${width}×${height} are more than the ${+(limits
              .maxPixels / 1_000_000).toFixed(2)} megapixels an image may have on this instance`
        })
      }
      const frames = yield* Effect.forEach(images, (image) =>
        metadataOf(image.bytes, limits.maxPixels).pipe(
          Effect.zipRight(attempt("a frame could not be drawn", () =>
            open(image.bytes, limits.maxPixels)
              .rotate()
              .resize({ width, height, fit: config.fit, background: { r: 0, g: 0, b: 0, alpha: 0 } })
              .ensureAlpha()
              .png({ compressionLevel: 0 })
              .toBuffer(), image.bytes))
        ))
      const options = { loop: config.loop, delay: frames.map(() => config.delay) }
      const joined = sharpModule()(frames, { join: { animated: true } })
      const bytes = yield* attempt("the animation could not be encoded", () =>
        (config.format === "webp" ? joined.webp(options) : joined.gif(options)).toBuffer())
      yield* log(
        `${config.format}, ${frames.length} frames of ${width}×${height} every ${config.delay} ms, ${
          formatBytes(bytes.length)
        }`
      )
      return NodeType.NodeValue.media("image", `image/${config.format}`, new Uint8Array(bytes))
    })
})
