/**
 * Video for tests, decoded for real: ffprobe (`@ffprobe-installer/ffprobe`) reads what a node
 * made, ffmpeg makes test videos from its own sources and reads a frame's colour; the processes
 * of a directory are found in `/proc`, so a test can see that a killed ffmpeg is gone.
 */
import { Effect } from "effect"
import { execFile } from "node:child_process"
import { mkdtempSync, readdirSync, readFileSync, readlinkSync, rmSync, writeFileSync } from "node:fs"
import { createRequire } from "node:module"
import { tmpdir } from "node:os"
import { join } from "node:path"

const load = createRequire(import.meta.url)

/** The ffmpeg the nodes run. */
export const ffmpegPath: string = (load("@ffmpeg-installer/ffmpeg") as { path: string }).path

/** The ffprobe of the tests. */
export const ffprobePath: string = (load("@ffprobe-installer/ffprobe") as { path: string }).path

const exec = (file: string, args: ReadonlyArray<string>, encoding: "utf8" | "buffer" = "utf8") =>
  Effect.async<string | Buffer, Error>((resume) => {
    execFile(
      file,
      args,
      { encoding, maxBuffer: 64 * 1024 * 1024 },
      (error, stdout, stderr) =>
        resume(error === null ? Effect.succeed(stdout) : Effect.fail(new Error(`${error.message}\n${String(stderr)}`)))
    )
  })

/** Runs `body` on a file holding `bytes`, removed afterwards. */
const withFile = <A>(bytes: Uint8Array, body: (path: string) => Effect.Effect<A, Error>) =>
  Effect.acquireUseRelease(
    Effect.sync(() => {
      const dir = mkdtempSync(join(tmpdir(), "appexec-video-test-"))
      writeFileSync(join(dir, "media"), bytes)
      return dir
    }),
    (dir) => body(join(dir, "media")),
    (dir) => Effect.sync(() => rmSync(dir, { recursive: true, force: true }))
  )

/** What ffprobe reads of a video. */
export interface Probed {
  readonly formatName: string
  readonly duration: number
  readonly video: {
    readonly codec: string
    readonly width: number
    readonly height: number
    readonly pixFmt: string
    readonly frames: number
    readonly fps: number
  }
  readonly audio: { readonly codec: string } | undefined
}

/** ffprobe's reading of `bytes`. */
export const ffprobe = (bytes: Uint8Array) =>
  withFile(
    bytes,
    (path) =>
      exec(ffprobePath, ["-v", "error", "-count_frames", "-show_streams", "-show_format", "-of", "json", path]).pipe(
        Effect.map((out): Probed => {
          const json = JSON.parse(String(out)) as {
            streams: Array<Record<string, string | number>>
            format: { format_name: string; duration: string }
          }
          const video = json.streams.find((s) => s.codec_type === "video")!
          const audio = json.streams.find((s) => s.codec_type === "audio")
          const [num, den] = String(video.avg_frame_rate).split("/").map(Number)
          return {
            formatName: json.format.format_name,
            duration: Number(json.format.duration),
            video: {
              codec: String(video.codec_name),
              width: Number(video.width),
              height: Number(video.height),
              pixFmt: String(video.pix_fmt),
              frames: Number(video.nb_read_frames),
              fps: num! / (den || 1)
            },
            audio: audio === undefined ? undefined : { codec: String(audio.codec_name) }
          }
        })
      )
  )

/** The mean colour (r, g, b) of the frame of `bytes` at `seconds`. */
export const colourAt = (bytes: Uint8Array, seconds: number) =>
  withFile(bytes, (path) =>
    exec(ffmpegPath, [
      "-v",
      "error",
      "-ss",
      String(seconds),
      "-i",
      path,
      "-frames:v",
      "1",
      "-vf",
      "scale=1:1:flags=area",
      "-f",
      "rawvideo",
      "-pix_fmt",
      "rgb24",
      "-"
    ], "buffer").pipe(Effect.map((out) => [...(out as Buffer).subarray(0, 3)])))

/** A test video made by ffmpeg from its sources: `args` between the common ones and the output file. */
export const makeVideo = (args: ReadonlyArray<string>, extension: "mp4" | "webm" | "ts" = "mp4") =>
  Effect.acquireUseRelease(
    Effect.sync(() => mkdtempSync(join(tmpdir(), "appexec-video-test-"))),
    (dir) =>
      exec(ffmpegPath, ["-v", "error", "-y", ...args, join(dir, `made.${extension}`)]).pipe(
        Effect.map(() => new Uint8Array(readFileSync(join(dir, `made.${extension}`))))
      ),
    (dir) => Effect.sync(() => rmSync(dir, { recursive: true, force: true }))
  )

/**
 * A 320×240 MP4 of 2 s at 25 fps: red for its first second, blue for its second, with a
 * 440 Hz tone (AAC) throughout.
 */
export const redThenBlue = makeVideo([
  "-f",
  "lavfi",
  "-i",
  "color=c=red:s=320x240:r=25:d=1",
  "-f",
  "lavfi",
  "-i",
  "color=c=blue:s=320x240:r=25:d=1",
  "-f",
  "lavfi",
  "-i",
  "sine=frequency=440:duration=2",
  "-filter_complex",
  "[0:v][1:v]concat=n=2:v=1:a=0[v]",
  "-map",
  "[v]",
  "-map",
  "2:a",
  "-c:v",
  "libx264",
  "-pix_fmt",
  "yuv420p",
  "-c:a",
  "aac"
])

/** Whether an MP4 has its index (`moov`) before its media (`mdat`): a player starts before the end arrives. */
export const isFastStart = (bytes: Uint8Array): boolean => {
  const text = Buffer.from(bytes).toString("latin1")
  const moov = text.indexOf("moov")
  const mdat = text.indexOf("mdat")
  return moov !== -1 && mdat !== -1 && moov < mdat
}

/** The ids of the processes working in `dir` or under it (Linux `/proc`): the ffmpeg runs of a node. */
export const processesIn = (dir: string): ReadonlyArray<number> =>
  readdirSync("/proc")
    .filter((entry) => /^\d+$/.test(entry))
    .filter((pid) => {
      try {
        return readlinkSync(`/proc/${pid}/cwd`).startsWith(dir)
      } catch {
        return false
      }
    })
    .map(Number)

/** Whether process `pid` exists. */
export const alive = (pid: number): boolean => {
  try {
    process.kill(pid, 0)
    return true
  } catch {
    return false
  }
}
