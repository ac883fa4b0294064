/**
 * `video.slideshow`: several images, in the order of the definition's edges, become a video in
 * which each is shown for `slide` seconds and fades into the next over `transition` seconds.
 * Each picture is drawn into the frame by sharp; ffmpeg lays them over a black background, each
 * fading in (its alpha) from its start, so the crossfade needs no filter newer than FFmpeg 4.
 */
import { NodeType } from "@appexec/core"
import { formatBytes, mediaOf } from "@appexec/nodes/Media"
import { Effect, Schema } from "effect"
import * as Video from "./internal/video.js"
import * as VideoNode from "./internal/VideoNode.js"

/** Most images in one slideshow. */
export const MAX_SLIDES = 50

/** The config of `video.slideshow`. */
export const Config = Schema.Struct({
  /** Frame width and height in pixels, even (default 1280 × 720). */
  ...Video.frameSizeFields,
  /** Seconds each image is on screen, its fades included (default 3). */
  slide: Schema.optionalWith(Video.Seconds, { default: () => 3 }),
  /** Seconds of each crossfade, 0 (cuts) to 10, shorter than `slide` (default 0.75). */
  transition: Schema.optionalWith(Schema.Number.pipe(Schema.between(0, 10)), { default: () => 0.75 }),
  /** Frames per second (default 25). */
  fps: Schema.optionalWith(Video.Fps, { default: () => 25 }),
  /** An image of another shape is cropped to cover the frame, or fits inside it on black (default cover). */
  fit: Schema.optionalWith(Video.Fit, { default: () => "cover" as const }),
  /** Container and codec (default mp4: H.264). */
  format: Schema.optionalWith(Video.VideoFormat, { default: () => "mp4" as const })
})
export type Config = typeof Config.Type

/** The length of a slideshow of `count` images, in seconds. */
export const lengthOf = (config: Config, count: number): number =>
  count * config.slide - (count - 1) * config.transition

/**
 * The filter graph of `count` images (inputs 0…count-1): a black background of the whole length,
 * and over it each image from its start, fading in over the one before.
 */
export const filterGraph = (config: Config, count: number): string => {
  const { fps, height, slide, transition, width } = config
  const total = lengthOf(config, count)
  const perImage = Math.max(1, Math.round(slide * fps))
  const lines = [`color=c=black:s=${width}x${height}:r=${fps}:d=${total},format=yuv420p[bg]`]
  for (let i = 0; i < count; i++) {
    const start = i * (slide - transition)
    const fade = i > 0 && transition > 0 ? `,fade=t=in:st=0:d=${transition}:alpha=1` : ""
    lines.push(
      `[${i}:v]loop=loop=${perImage - 1}:size=1:start=0,setpts=N/(${fps}*TB),format=yuva420p${fade},` +
        `setpts=PTS-STARTPTS+${start}/TB[s${i}]`
    )
    lines.push(`[${i === 0 ? "bg" : `o${i - 1}`}][s${i}]overlay=eof_action=pass[o${i}]`)
  }
  lines.push(`[o${count - 1}]setsar=1,format=yuv420p[out]`)
  return lines.join(";")
}

/** `video.slideshow`: images in turn, with crossfades. */
export const videoSlideshow = VideoNode.define({
  type: "video.slideshow",
  description:
    "Makes a video of its images in edge order, each shown `slide` seconds with a crossfade of `transition` seconds into the next.",
  inputs: { min: 1, max: MAX_SLIDES },
  config: Config,
  check: (config) =>
    config.transition >= config.slide
      ? [`transition (${config.transition} s) must be shorter than slide (${config.slide} s)`]
      : [],
  what: "the slideshow could not be made",
  run: ({ config, dir, log, progress, upstream, what }) =>
    Effect.gen(function*() {
      const total = lengthOf(config, upstream.length)
      yield* Video.checkLimits(what, config, total)
      const inputs: Array<string> = []
      for (const [i, value] of upstream.entries()) {
        const image = yield* mediaOf(value, "image")
        inputs.push(...(yield* Video.rawFrame(image, config, dir, `image${i}.rgb`)))
      }
      const frames = Math.max(1, Math.round(total * config.fps))
      const { took, video } = yield* Video.encode({
        args: [
          ...inputs,
          "-filter_complex",
          filterGraph(config, upstream.length),
          "-map",
          "[out]",
          "-frames:v",
          String(frames)
        ],
        out: `slideshow.${config.format}`,
        format: config.format,
        audio: false,
        dir,
        what,
        seconds: total,
        progress
      })
      yield* log(
        `${config.format} ${config.width}×${config.height}, ${upstream.length} images, ${Video.secondsText(total)}, ${
          formatBytes(video.bytes.length)
        } in ${Video.secondsText(took)}`
      )
      return NodeType.NodeValue.media("video", video.contentType, video.bytes)
    })
})
