/**
 * What the video nodes share: their config fields, a temporary directory per run (removed
 * however the run ends, also when it is interrupted), the limits of `video` in the settings,
 * images prepared by sharp as raw frames for ffmpeg, the encoder arguments of MP4 and WebM, and
 * the made file read back as media within `video.maxBytes`.
 */
import { NodeType } from "@appexec/core"
import { attempt, metadataOf, open, UNREADABLE } from "@appexec/nodes-image/Imaging"
import { formatBytes, type Media, mediaOf } from "@appexec/nodes/Media"
import { NodesSettings } from "@appexec/nodes/NodesSettings"
import { Clock, Effect, Schema } from "effect"
import { mkdtemp, readFile, rm, stat, writeFile } from "node:fs/promises"
import { tmpdir } from "node:os"
import { join } from "node:path"
import * as Ffmpeg from "./ffmpeg.js"
import * as StaleWorkDirs from "./StaleWorkDirs.js"

const fail = (message: string) => new NodeType.NodeFailure({ message })

/** A video's width or height: even (H.264 and VP9 in 4:2:0 need it), 16–7680. */
export const VideoSide = Schema.Number.pipe(
  Schema.int(),
  Schema.between(16, 7680),
  Schema.filter((n) => n % 2 === 0, { message: () => "must be an even number (video frames have even sides)" })
)

/** The frame size fields of a video node's config: `width` × `height` (default 1280 × 720). */
export const frameSizeFields = {
  /** Frame width in pixels, even (default 1280). */
  width: Schema.optionalWith(VideoSide, { default: () => 1280 }),
  /** Frame height in pixels, even (default 720). */
  height: Schema.optionalWith(VideoSide, { default: () => 720 })
}

/** Frames per second, 1–60. */
export const Fps = Schema.Number.pipe(Schema.int(), Schema.between(1, 60))

/** A length in seconds of video, 0.5 to 3600 (the settings' `video.maxSeconds` bounds it further). */
export const Seconds = Schema.Number.pipe(Schema.between(0.5, 3600))

/** The containers and codecs the video nodes write: MP4 (H.264, AAC) or WebM (VP9, Opus). */
export const VideoFormat = Schema.Literal("mp4", "webm")
export type VideoFormat = typeof VideoFormat.Type

/** How a picture fills a frame of another shape: cropped to cover it, or whole inside it on black. */
export const Fit = Schema.Literal("cover", "contain")
export type Fit = typeof Fit.Type

/** The `Content-Type` of a video format. */
export const contentTypeOf = (format: VideoFormat): string => `video/${format}`

/**
 * A fresh temporary directory for one run, named after this process, removed with everything in
 * it when the scope closes (and by the next start if this process is killed first: `StaleWorkDirs`).
 */
export const workDir = Effect.gen(function*() {
  const { video } = yield* NodesSettings
  const parent = video.tempDir ?? tmpdir()
  yield* StaleWorkDirs.sweepOnce(parent, video.timeoutMs)
  return yield* Effect.acquireRelease(
    Effect.tryPromise({
      try: () => mkdtemp(join(parent, StaleWorkDirs.prefixOf())),
      catch: (error) => error
    }).pipe(
      Effect.tapError((error) => Effect.logError("video: the temporary directory could not be made", error)),
      Effect.mapError(() => fail("the video work could not start: no temporary space on this instance"))
    ),
    (dir) =>
      Effect.tryPromise(() => rm(dir, { recursive: true, force: true, maxRetries: 3 })).pipe(
        Effect.catchAll((error) => Effect.logError(`video: the temporary directory ${dir} could not be removed`, error))
      )
  )
})

/** Writes `bytes` to `name` in `dir`. */
export const writeIn = (dir: string, name: string, bytes: Uint8Array) =>
  Effect.tryPromise({ try: () => writeFile(join(dir, name), bytes), catch: (error) => error }).pipe(
    Effect.tapError((error) => Effect.logError("video: a temporary file could not be written", error)),
    Effect.mapError(() => fail("the video work failed: no temporary space on this instance"))
  )

/** Fails unless a `width` × `height` frame lasting `seconds` is within the settings' video limits. */
export const checkLimits = (
  what: string,
  frame: { readonly width: number; readonly height: number },
  seconds?: number
) =>
  Effect.gen(function*() {
    const { video } = yield* NodesSettings
    if (frame.width * frame.height > video.maxPixels) {
      return yield* fail(
        `${what}: ${frame.width}×${frame.height} is more than the ${+(video.maxPixels / 1_000_000).toFixed(
          2
        )} megapixels a video frame may have on this instance`
      )
    }
    if (seconds !== undefined && seconds > video.maxSeconds) {
      return yield* fail(
        `${what}: ${+seconds.toFixed(2)} s is longer than the ${video.maxSeconds} s a video may last on this instance`
      )
    }
  })

/** The arguments that encode the video (and the audio, when there is) as `format`, within `video.maxBytes`. */
export const encoderArgs = (format: VideoFormat, maxBytes: number, audio: boolean): ReadonlyArray<string> => [
  ...(format === "mp4"
    ? ["-c:v", "libx264", "-preset", "veryfast", "-crf", "20", "-pix_fmt", "yuv420p"]
    : ["-c:v", "libvpx-vp9", "-crf", "32", "-b:v", "0", "-deadline", "good", "-cpu-used", "4", "-row-mt", "1"]),
  ...(audio ? (format === "mp4" ? ["-c:a", "aac", "-b:a", "128k"] : ["-c:a", "libopus", "-b:a", "96k"]) : ["-an"]),
  // Moves the index to the front, so that a player starts before the whole file has arrived.
  ...(format === "mp4" ? ["-movflags", "+faststart"] : []),
  // ffmpeg stops writing past the limit; the file is then refused for its size.
  "-fs",
  String(maxBytes + 1)
]

/** What `encode` needs: the run's inputs and filters, the file it writes, and its format. */
export interface Encoding {
  /** The arguments before the encoder's: inputs, maps, filters, frame counts. */
  readonly args: ReadonlyArray<string>
  /** The file written in `dir`. */
  readonly out: string
  readonly format: VideoFormat
  readonly audio: boolean
  readonly dir: string
  readonly what: string
  /** Length of the video, in seconds, for the progress (none: no progress). */
  readonly seconds: number | undefined
  readonly progress: Ffmpeg.RunOptions["progress"]
}

/**
 * Runs ffmpeg to encode a video as `format` within `video.maxBytes` and reads what it made; the
 * video and the seconds the encode took, for the node's log line.
 */
export const encode = (encoding: Encoding) =>
  Effect.gen(function*() {
    const { video: limits } = yield* NodesSettings
    const started = yield* Clock.currentTimeMillis
    yield* Ffmpeg.run({
      args: [...encoding.args, ...encoderArgs(encoding.format, limits.maxBytes, encoding.audio), encoding.out],
      cwd: encoding.dir,
      what: encoding.what,
      seconds: encoding.seconds,
      progress: encoding.progress
    })
    const video = yield* readMade(encoding.dir, encoding.out, contentTypeOf(encoding.format), encoding.what)
    return { video, took: ((yield* Clock.currentTimeMillis) - started) / 1000 }
  })

/** The file `name` in `dir` as media of `contentType`, refused when it is over `video.maxBytes`. */
export const readMade = (dir: string, name: string, contentType: string, what: string) =>
  Effect.gen(function*() {
    const { video } = yield* NodesSettings
    const path = join(dir, name)
    const size = yield* Effect.tryPromise(() => stat(path)).pipe(
      Effect.mapError(() => fail(`${what}: ffmpeg wrote nothing`))
    )
    if (size.size > video.maxBytes) {
      return yield* fail(
        `${what}: it would be larger than the ${formatBytes(video.maxBytes)} a video may have on this instance`
      )
    }
    if (size.size === 0) return yield* fail(`${what}: ffmpeg wrote nothing`)
    const bytes = yield* Effect.tryPromise(() => readFile(path)).pipe(
      Effect.mapError(() => fail(`${what}: the result could not be read`))
    )
    const media: Media = { contentType, bytes: new Uint8Array(bytes.buffer, bytes.byteOffset, bytes.byteLength) }
    return media
  })

/** An image drawn into a `width` × `height` frame (`fit`), black where it does not cover it. */
export interface Frame {
  readonly width: number
  readonly height: number
  readonly fit: Fit
}

/**
 * Decodes `image` (within `media.maxPixels`, turned as its EXIF says), draws it into `frame` and
 * writes it as raw RGB to `name` in `dir`: the ffmpeg arguments that read it back as one frame.
 */
export const rawFrame = (image: Media, frame: Frame, dir: string, name: string) =>
  Effect.gen(function*() {
    const { media } = yield* NodesSettings
    yield* metadataOf(image.bytes, media.maxPixels)
    const raw = yield* attempt(UNREADABLE, () =>
      open(image.bytes, media.maxPixels)
        .rotate()
        .resize({ width: frame.width, height: frame.height, fit: frame.fit, background: "#000000" })
        .flatten({ background: "#000000" })
        .removeAlpha()
        .raw()
        .toBuffer(), image.bytes)
    yield* writeIn(dir, name, raw)
    return ["-f", "rawvideo", "-pix_fmt", "rgb24", "-s", `${frame.width}x${frame.height}`, "-i", name]
  })

/**
 * The videos read, by content type: the file's extension and the demuxer ffmpeg is held to. A
 * forced demuxer keeps ffmpeg from taking the bytes for something else, such as an HLS playlist or
 * a concat list that would make it open other files or URLs.
 */
const READ: Readonly<Record<string, { readonly extension: string; readonly demuxer: string }>> = {
  "video/mp4": { extension: "mp4", demuxer: "mov" },
  "video/quicktime": { extension: "mov", demuxer: "mov" },
  "video/webm": { extension: "webm", demuxer: "matroska" },
  "video/x-matroska": { extension: "mkv", demuxer: "matroska" }
}

/**
 * The upstream video (produced, or fetched from a URL as images are) written to `dir` and probed:
 * the ffmpeg arguments that read it (its demuxer forced, local files only) and what ffmpeg says
 * of it. A type other than MP4, QuickTime, WebM or Matroska, a file with no video stream, or a
 * frame over `video.maxPixels` is refused; so is one longer than `video.maxSeconds` when `whole`
 * (the node reads all of it).
 */
export const videoInput = (upstream: NodeType.UpstreamValue, dir: string, what: string, whole: boolean) =>
  Effect.gen(function*() {
    const video = yield* mediaOf(upstream, "video")
    const read = READ[video.contentType]
    if (read === undefined) {
      return yield* fail(`${what}: ${video.contentType} is not a video type read here (MP4, QuickTime, WebM, Matroska)`)
    }
    const name = `input.${read.extension}`
    yield* writeIn(dir, name, video.bytes)
    const args = ["-f", read.demuxer, "-protocol_whitelist", "file", "-i", name]
    const probe = yield* Ffmpeg.probe(args, dir, what)
    if (probe.video === undefined) return yield* fail(`${what}: the file has no video stream`)
    yield* checkLimits(what, probe.video, whole ? probe.seconds : undefined)
    return { args, probe, video: probe.video, bytes: video.bytes.length }
  })

/** `seconds` in words: `5 s`, `2.5 s`. */
export const secondsText = (seconds: number): string => `${+seconds.toFixed(2)} s`
