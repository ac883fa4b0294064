/**
 * The image-editing nodes: `image.resize`, `image.convert`, `image.grayscale` and `image.blur`.
 * Each takes one image (produced upstream, or an `input.url` fetched through the guarded HTTP
 * port) and yields an image in the same format unless it converts.
 */
import { Effect, Schema } from "effect"
import { ImageFormat } from "./Imaging.js"
import * as EditNode from "./internal/EditNode.js"

const Side = Schema.Number.pipe(Schema.int(), Schema.between(1, 8192))
const Quality = Schema.Number.pipe(Schema.int(), Schema.between(1, 100))

/** How `image.resize` fits the image into the box (sharp's `fit`). */
export const Fit = Schema.Literal("cover", "contain", "fill", "inside", "outside")

/** The config of `image.resize`: at least one of `width` and `height`. */
export const ResizeConfig = Schema.Struct({
  width: Schema.optional(Side),
  height: Schema.optional(Side),
  fit: Schema.optionalWith(Fit, { default: () => "cover" as const })
})

/** `image.resize`: scales to `width` × `height` (one of them may be left out to keep the aspect ratio). */
export const imageResize = EditNode.define({
  type: "image.resize",
  description: "Resizes an image to `width` × `height` with the given `fit` (cover, contain, fill, inside, outside).",
  config: ResizeConfig,
  check: (config) => (config.width === undefined && config.height === undefined ? ["give width, height or both"] : []),
  edit: (config) => ({
    apply: (pipeline) =>
      Effect.succeed(
        pipeline.resize({
          ...(config.width === undefined ? {} : { width: config.width }),
          ...(config.height === undefined ? {} : { height: config.height }),
          fit: config.fit,
          background: { r: 0, g: 0, b: 0, alpha: 0 }
        })
      )
  })
})

/** The config of `image.convert`. */
export const ConvertConfig = Schema.Struct({
  format: ImageFormat,
  quality: Schema.optional(Quality)
})

/** `image.convert`: re-encodes as png, jpeg, webp or avif. */
export const imageConvert = EditNode.define({
  type: "image.convert",
  description: "Re-encodes an image as `format` (png, jpeg, webp, avif) at an optional `quality` (1–100).",
  config: ConvertConfig,
  edit: (config) => ({
    apply: (pipeline) =>
      Effect.succeed(config.format === "jpeg" ? pipeline.flatten({ background: "#ffffff" }) : pipeline),
    format: config.format,
    quality: config.quality
  })
})

/** `image.grayscale`: drops colour. */
export const imageGrayscale = EditNode.define({
  type: "image.grayscale",
  description: "Turns an image into shades of grey.",
  config: Schema.Struct({}),
  edit: () => ({ apply: (pipeline) => Effect.succeed(pipeline.grayscale()) })
})

/** The config of `image.blur`. */
export const BlurConfig = Schema.Struct({
  /** Gaussian sigma in pixels, 0.3–1000 (default 4). */
  sigma: Schema.optionalWith(Schema.Number.pipe(Schema.between(0.3, 1000)), { default: () => 4 })
})

/** `image.blur`: a Gaussian blur. */
export const imageBlur = EditNode.define({
  type: "image.blur",
  description: "Blurs an image with a Gaussian of `sigma` pixels (0.3–1000, default 4).",
  config: BlurConfig,
  edit: (config) => ({ apply: (pipeline) => Effect.succeed(pipeline.blur(config.sigma)) })
})
