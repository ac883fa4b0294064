/**
 * `video.fromImage`: one image becomes a video with a slow zoom or pan across it (the Ken Burns
 * effect), made by ffmpeg's `zoompan` from the picture drawn by sharp at a multiple of the
 * frame's size, so that the moving crop does not jitter from pixel to pixel.
 */
import { NodeType } from "@appexec/core"
import { formatBytes, mediaOf } from "@appexec/nodes/Media"
import { Effect, Schema } from "effect"
import * as Video from "./internal/video.js"
import * as VideoNode from "./internal/VideoNode.js"

/** The camera's movement: a zoom into or out of the centre, or a pan across the picture at `zoom`. */
export const Motion = Schema.Literal("zoom-in", "zoom-out", "pan-left", "pan-right", "pan-up", "pan-down")
export type Motion = typeof Motion.Type

/** The config of `video.fromImage`. */
export const Config = Schema.Struct({
  /** Frame width and height in pixels, even (default 1280 × 720). */
  ...Video.frameSizeFields,
  /** Length in seconds (default 5). */
  duration: Schema.optionalWith(Video.Seconds, { default: () => 5 }),
  /** Frames per second (default 25). */
  fps: Schema.optionalWith(Video.Fps, { default: () => 25 }),
  /** The movement (default zoom-in). */
  motion: Schema.optionalWith(Motion, { default: () => "zoom-in" as const }),
  /** The largest zoom, 1–3: where a zoom ends (or starts, zooming out), and the zoom of a pan (default 1.25). */
  zoom: Schema.optionalWith(Schema.Number.pipe(Schema.between(1, 3)), { default: () => 1.25 }),
  /** Container and codec (default mp4: H.264). */
  format: Schema.optionalWith(Video.VideoFormat, { default: () => "mp4" as const })
})
export type Config = typeof Config.Type

/** How many times the frame's size the picture is drawn at before `zoompan` crops it: 1–4. */
export const oversample = (width: number, height: number): number =>
  Math.max(1, Math.min(4, Math.floor(4096 / Math.max(width, height))))

/** The `zoompan` filter of `config` over `frames` frames. */
export const zoompan = (config: Config, frames: number): string => {
  const last = Math.max(1, frames - 1)
  const t = `on/${last}`
  const z = config.zoom
  const zoom = config.motion === "zoom-in"
    ? `1+${z - 1}*${t}`
    : config.motion === "zoom-out"
    ? `${z}-${z - 1}*${t}`
    : `${z}`
  const across = (side: "iw" | "ih", forward: boolean) => `(${side}-${side}/zoom)*${forward ? t : `(1-${t})`}`
  const x = config.motion === "pan-left"
    ? across("iw", false)
    : config.motion === "pan-right"
    ? across("iw", true)
    : "(iw-iw/zoom)/2"
  const y = config.motion === "pan-up"
    ? across("ih", false)
    : config.motion === "pan-down"
    ? across("ih", true)
    : "(ih-ih/zoom)/2"
  return `zoompan=z='${zoom}':x='${x}':y='${y}':d=${frames}:s=${config.width}x${config.height}:fps=${config.fps}`
}

/** `video.fromImage`: an image becomes a video with a slow zoom or pan (Ken Burns). */
export const videoFromImage = VideoNode.define({
  type: "video.fromImage",
  description:
    "Makes a video of `duration` seconds from one image with a slow zoom or pan across it (Ken Burns), MP4 (H.264) or WebM (VP9).",
  inputs: { min: 1, max: 1 },
  config: Config,
  what: "the video could not be made",
  run: ({ config, dir, log, progress, upstream, what }) =>
    Effect.gen(function*() {
      yield* Video.checkLimits(what, config, config.duration)
      const image = yield* mediaOf(upstream[0]!, "image")
      const scale = oversample(config.width, config.height)
      const input = yield* Video.rawFrame(
        image,
        { width: config.width * scale, height: config.height * scale, fit: "cover" },
        dir,
        "image.rgb"
      )
      const frames = Math.max(1, Math.round(config.duration * config.fps))
      const { took, video } = yield* Video.encode({
        args: [...input, "-vf", `${zoompan(config, frames)},setsar=1,format=yuv420p`, "-frames:v", String(frames)],
        out: `video.${config.format}`,
        format: config.format,
        audio: false,
        dir,
        what,
        seconds: config.duration,
        progress
      })
      yield* log(
        `${config.format} ${config.width}×${config.height}, ${
          Video.secondsText(config.duration)
        } at ${config.fps} fps (${config.motion}), ${formatBytes(video.bytes.length)} in ${Video.secondsText(took)}`
      )
      return NodeType.NodeValue.media("video", video.contentType, video.bytes)
    })
})
