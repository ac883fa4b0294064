/**
 * The image-editing nodes: `image.resize`, `image.convert`, `image.grayscale` and `image.blur`.
 * Each takes one image (produced upstream, or an `input.url` fetched through the guarded HTTP
 * port) and yields an image in the same format unless it converts.
 */
import { NodeType } from "@appexec/core"
import { Effect, Schema } from "effect"
import { editImage } from "./internal/editing.js"
import { ImageFormat } from "./internal/imaging.js"

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
export const imageResize = NodeType.defineNode({
  type: "image.resize",
  description: "Resizes an image to `width` × `height` with the given `fit` (cover, contain, fill, inside, outside).",
  role: "process",
  inputs: { min: 1, max: 1 },
  config: ResizeConfig,
  check: (config) => (config.width === undefined && config.height === undefined ? ["give width, height or both"] : []),
  run: ({ config, log, upstream }) =>
    editImage(upstream[0]!, {
      apply: (pipeline) =>
        Effect.succeed(
          pipeline.resize({
            ...(config.width === undefined ? {} : { width: config.width }),
            ...(config.height === undefined ? {} : { height: config.height }),
            fit: config.fit,
            background: { r: 0, g: 0, b: 0, alpha: 0 }
          })
        )
    }, log)
})

/** The config of `image.convert`. */
export const ConvertConfig = Schema.Struct({
  format: ImageFormat,
  quality: Schema.optional(Quality)
})

/** `image.convert`: re-encodes as png, jpeg, webp or avif. */
export const imageConvert = NodeType.defineNode({
  type: "image.convert",
  description: "Re-encodes an image as `format` (png, jpeg, webp, avif) at an optional `quality` (1–100).",
  role: "process",
  inputs: { min: 1, max: 1 },
  config: ConvertConfig,
  run: ({ config, log, upstream }) =>
    editImage(upstream[0]!, {
      apply: (pipeline) =>
        Effect.succeed(config.format === "jpeg" ? pipeline.flatten({ background: "#ffffff" }) : pipeline),
      format: config.format,
      quality: config.quality
    }, log)
})

/** `image.grayscale`: drops colour. */
export const imageGrayscale = NodeType.defineNode({
  type: "image.grayscale",
  description: "Turns an image into shades of grey.",
  role: "process",
  inputs: { min: 1, max: 1 },
  config: Schema.Struct({}),
  run: ({ log, upstream }) =>
    editImage(upstream[0]!, { apply: (pipeline) => Effect.succeed(pipeline.grayscale()) }, log)
})

/** The config of `image.blur`. */
export const BlurConfig = Schema.Struct({
  /** Gaussian sigma in pixels, 0.3–1000 (default 4). */
  sigma: Schema.optionalWith(Schema.Number.pipe(Schema.between(0.3, 1000)), { default: () => 4 })
})

/** `image.blur`: a Gaussian blur. */
export const imageBlur = NodeType.defineNode({
  type: "image.blur",
  description: "Blurs an image with a Gaussian of `sigma` pixels (0.3–1000, default 4).",
  role: "process",
  inputs: { min: 1, max: 1 },
  config: BlurConfig,
  run: ({ config, log, upstream }) =>
    editImage(upstream[0]!, { apply: (pipeline) => Effect.succeed(pipeline.blur(config.sigma)) }, log)
})
