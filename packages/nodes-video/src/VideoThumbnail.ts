/**
 * `video.thumbnail`: the frame of a video at a time offset, as an image. ffmpeg seeks and writes
 * that one frame as PNG; sharp scales and encodes it.
 */
import { NodeType } from "@appexec/core"
import { encode, ImageFormat, open } from "@appexec/nodes-image/Imaging"
import { formatBytes } from "@appexec/nodes/Media"
import { NodesSettings } from "@appexec/nodes/NodesSettings"
import { Effect, Schema } from "effect"
import { readFile } from "node:fs/promises"
import { join } from "node:path"
import * as Ffmpeg from "./internal/ffmpeg.js"
import { secondsText, videoInput } from "./internal/video.js"
import * as VideoNode from "./internal/VideoNode.js"

/** The config of `video.thumbnail`. */
export const Config = Schema.Struct({
  /** The time of the frame, in seconds from the start (default 0). */
  at: Schema.optionalWith(Schema.Number.pipe(Schema.between(0, 86_400)), { default: () => 0 }),
  /** The image's width, 16–4096 pixels, its height following (default: the video's size). */
  width: Schema.optional(Schema.Number.pipe(Schema.int(), Schema.between(16, 4096))),
  /** Encoding (default jpeg). */
  format: Schema.optionalWith(ImageFormat, { default: () => "jpeg" as const }),
  /** Encoder quality 1–100 for jpeg, webp and avif. */
  quality: Schema.optional(Schema.Number.pipe(Schema.int(), Schema.between(1, 100)))
})

/** `video.thumbnail`: the frame at `at` seconds as an image. */
export const videoThumbnail = VideoNode.define({
  type: "video.thumbnail",
  description:
    "Takes the frame of a video at `at` seconds as an image (jpeg, png, webp or avif), optionally scaled to `width`.",
  inputs: { min: 1, max: 1 },
  config: Config,
  what: "no thumbnail could be taken",
  run: ({ config, dir, log, upstream, what }) =>
    Effect.gen(function*() {
      const input = yield* videoInput(upstream[0]!, dir, what, false)
      const length = input.probe.seconds
      if (length !== undefined && config.at >= length) {
        return yield* new NodeType.NodeFailure({
          message: `${what}: the video lasts ${secondsText(length)}, so it has no frame at ${secondsText(config.at)}`
        })
      }
      yield* Ffmpeg.run({
        args: [
          "-ss",
          String(config.at),
          ...input.args,
          "-frames:v",
          "1",
          "-f",
          "image2",
          "-c:v",
          "png",
          "frame.png"
        ],
        cwd: dir,
        what
      })
      const png = yield* Effect.tryPromise(() => readFile(join(dir, "frame.png"))).pipe(
        Effect.mapError(() =>
          new NodeType.NodeFailure({ message: `${what}: the video has no frame at ${secondsText(config.at)}` })
        )
      )
      const { media } = yield* NodesSettings
      const frame = open(png, media.maxPixels)
      const image = yield* encode(
        config.width === undefined ? frame : frame.resize({ width: config.width }),
        config.format,
        config.quality
      )
      yield* log(
        `${input.video.codec} ${input.video.width}×${input.video.height}, ${formatBytes(input.bytes)}: the frame at ${
          secondsText(config.at)
        } as ${config.format}`
      )
      return image
    })
})
