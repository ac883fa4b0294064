/**
 * `video.convert`: re-encodes a video as MP4 (H.264 and AAC, its index at the front so a player
 * starts at once) or WebM (VP9 and Opus), optionally scaled into a box and at another frame rate.
 */
import { NodeType } from "@appexec/core"
import { formatBytes } from "@appexec/nodes/Media"
import { Effect, Schema } from "effect"
import * as Video from "./internal/video.js"
import * as VideoNode from "./internal/VideoNode.js"

/** The config of `video.convert`. */
export const Config = Schema.Struct({
  /** Container and codecs: mp4 (H.264, AAC) or webm (VP9, Opus). */
  format: Video.VideoFormat,
  /** Largest width, even; the video is scaled down into `width` × `height` keeping its shape. */
  width: Schema.optional(Video.VideoSide),
  /** Largest height, even. */
  height: Schema.optional(Video.VideoSide),
  /** Frames per second of the result (default: the video's). */
  fps: Schema.optional(Video.Fps),
  /** Keep the first audio stream, re-encoded (default true); false drops the sound. */
  audio: Schema.optionalWith(Schema.Boolean, { default: () => true })
})
export type Config = typeof Config.Type

/** The scaling of `config`: into its box keeping the shape; sides are always made even. */
export const scaleFilter = (config: Pick<Config, "width" | "height">): string => {
  const even = "scale=trunc(iw/2)*2:trunc(ih/2)*2"
  if (config.width !== undefined && config.height !== undefined) {
    return `scale=${config.width}:${config.height}:force_original_aspect_ratio=decrease,${even}`
  }
  if (config.width !== undefined) return `scale=${config.width}:-2`
  if (config.height !== undefined) return `scale=-2:${config.height}`
  return even
}

/** The size of a `width` × `height` frame once scaled by `config`'s box (up to rounding). */
const scaledSize = (config: Config, width: number, height: number) => {
  const ratio = Math.min(
    config.width === undefined ? Infinity : config.width / width,
    config.height === undefined ? Infinity : config.height / height
  )
  return Number.isFinite(ratio)
    ? { width: Math.round(width * ratio), height: Math.round(height * ratio) }
    : { width, height }
}

/** `video.convert`: a video re-encoded as MP4 or WebM. */
export const videoConvert = VideoNode.define({
  type: "video.convert",
  description:
    "Re-encodes a video as MP4 (H.264, AAC, faststart) or WebM (VP9, Opus), optionally scaled into `width` × `height` and at `fps`.",
  inputs: { min: 1, max: 1 },
  config: Config,
  what: "the video could not be converted",
  run: ({ config, dir, log, progress, upstream, what }) =>
    Effect.gen(function*() {
      const input = yield* Video.videoInput(upstream[0]!, dir, what, true)
      const size = scaledSize(config, input.video.width, input.video.height)
      yield* Video.checkLimits(what, size)
      const audio = config.audio && input.probe.hasAudio
      const { took, video } = yield* Video.encode({
        args: [
          ...input.args,
          "-map",
          "0:v:0",
          ...(audio ? ["-map", "0:a:0"] : []),
          "-vf",
          `${scaleFilter(config)},setsar=1`,
          ...(config.fps === undefined ? [] : ["-r", String(config.fps)])
        ],
        out: `converted.${config.format}`,
        format: config.format,
        audio,
        dir,
        what,
        seconds: input.probe.seconds,
        progress
      })
      yield* log(
        `in: ${input.video.codec} ${input.video.width}×${input.video.height}, ${
          formatBytes(input.bytes)
        }; out: ${config.format} ${audio ? "with" : "without"} sound, ${formatBytes(video.bytes.length)} in ${
          Video.secondsText(took)
        }`
      )
      return NodeType.NodeValue.media("video", video.contentType, video.bytes)
    })
})
