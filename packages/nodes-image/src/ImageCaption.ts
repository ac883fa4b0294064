/**
 * `image.caption`: sets upstream text on an upstream image, white on a translucent dark band
 * across the bottom (or top) of the picture.
 */
import { NodeType } from "@appexec/core"
import { Effect, Schema } from "effect"
import { renderText } from "./Imaging.js"
import { editImage } from "./internal/EditNode.js"

/** The config of `image.caption`. */
export const Config = Schema.Struct({
  /** Where the band goes (default bottom). */
  position: Schema.optionalWith(Schema.Literal("top", "bottom"), { default: () => "bottom" as const })
})

const isImage = (value: NodeType.NodeValue) => value._tag === "Media" || value._tag === "Url"

/** `image.caption`: the image is the first upstream value that is media or a URL; the text is the other one. */
export const imageCaption = NodeType.defineNode({
  type: "image.caption",
  description: "Sets the upstream text on the upstream image, on a band at the bottom or top.",
  role: "process",
  inputs: { min: 2, max: 2 },
  config: Config,
  run: ({ config, log, upstream }) =>
    Effect.gen(function*() {
      const imageIndex = upstream.findIndex((u) => isImage(u.value))
      if (imageIndex === -1) {
        return yield* new NodeType.NodeFailure({
          message: "expects an image and a text, but neither upstream value is an image"
        })
      }
      const image = upstream[imageIndex]!
      const other = upstream[1 - imageIndex]!
      const text = NodeType.NodeValue.asText(other.value)
      if (text === undefined) {
        return yield* new NodeType.NodeFailure({
          message: `expects an image and a text, but node '${other.nodeId}' produced media`
        })
      }
      return yield* editImage(image, {
        apply: (pipeline, { width, height }) =>
          Effect.gen(function*() {
            const size = Math.max(10, Math.round(Math.min(width, height) / 14))
            const label = yield* renderText(text, { width: width * 0.9, maxHeight: height * 0.45, size })
            if (label === undefined) return pipeline
            const bandHeight = Math.min(height, label.height + 2 * Math.round(size * 0.6))
            const bandTop = config.position === "bottom" ? height - bandHeight : 0
            const band = Buffer.from(
              `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${bandHeight}"><rect width="${width}" height="${bandHeight}" fill="#000000" fill-opacity="0.55"/></svg>`
            )
            return pipeline.composite([
              { input: band, left: 0, top: bandTop },
              {
                input: label.png,
                left: Math.max(0, Math.floor((width - label.width) / 2)),
                top: bandTop + Math.max(0, Math.floor((bandHeight - label.height) / 2))
              }
            ])
          })
      }, log)
    })
})
