/**
 * The video nodes on the real ffmpeg of `@ffmpeg-installer/ffmpeg`, each result decoded for real
 * (ffprobe: container, codecs, duration, size; frames' colours; sharp for images), in an instance
 * whose runs keep their temporary directories under a directory of the test, checked empty after.
 */
import { Ids } from "@appexec/api"
import { ExecutionReports } from "@appexec/core"
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import sharp from "sharp"
import { testImage } from "../../nodes/test/support/Images.js"
import { run } from "../../nodes/test/support/Instance.js"
import { failureOf, oneNode, resultOf, serving } from "../../nodes/test/support/OneNode.js"
import { colourAt, ffprobe, isFastStart, redThenBlue } from "./support/Video.js"
import { disc, withVideo } from "./support/VideoInstance.js"

describe("video.fromImage", () => {
  it.scoped("an image URL becomes an H.264 MP4 of the asked size and length, its index first, zooming in", () =>
    withVideo(Effect.gen(function*() {
      const origin = yield* serving({ "/disc.png": { type: "image/png", bytes: yield* disc } })
      const video = yield* resultOf(
        oneNode("video.fromImage", { width: 320, height: 180, duration: 2, fps: 25, zoom: 2 }),
        { in0: origin.url("/disc.png") }
      )
      expect(video.type).toBe("video")
      expect(video.contentType).toBe("video/mp4")
      expect(video.url).toMatch(/\/media\/executions\/.+\.mp4\?exp=\d+&sig=/)
      const probed = yield* ffprobe(video.bytes)
      expect(probed.formatName).toContain("mp4")
      expect(probed.video).toMatchObject({ codec: "h264", width: 320, height: 180, pixFmt: "yuv420p", frames: 50 })
      expect(probed.duration).toBeCloseTo(2, 1)
      expect(probed.audio).toBeUndefined()
      expect(isFastStart(video.bytes)).toBe(true)
      // The disc fills more of the frame at the end: the camera moved in.
      const [first] = yield* colourAt(video.bytes, 0)
      const [last] = yield* colourAt(video.bytes, 1.96)
      expect(last!).toBeGreaterThan(first! * 2.5)
      // ffmpeg's progress reached the execution's live reports, and its log has the result.
      const reports = yield* ExecutionReports.ExecutionReports
      const kept = (yield* reports.after(Ids.ExecutionId.make(video.executionId), 0)).reports.map((r) => r.report)
      const progress = kept.filter((r) => r._tag === "Progress" && r.nodeId === "work")
      expect(progress.length).toBeGreaterThan(0)
      expect(progress.at(-1)!).toMatchObject({ message: expect.stringMatching(/^\d+\.\d s of 2 s$/) })
      const lines = kept.flatMap((r) => r._tag === "Log" && r.nodeId === "work" ? [r.message] : [])
      expect(lines).toEqual([expect.stringMatching(/^mp4 320×180, 2 s at 25 fps \(zoom-in\), [\d.]+ KiB in [\d.]+ s$/)])
    })))

  it.scoped("writes WebM (VP9) and zooms out", () =>
    withVideo(Effect.gen(function*() {
      const origin = yield* serving({ "/disc.png": { type: "image/png", bytes: yield* disc } })
      const video = yield* resultOf(
        oneNode("video.fromImage", {
          width: 256,
          height: 144,
          duration: 1,
          fps: 10,
          motion: "zoom-out",
          format: "webm"
        }),
        { in0: origin.url("/disc.png") }
      )
      expect(video.contentType).toBe("video/webm")
      const probed = yield* ffprobe(video.bytes)
      expect(probed.formatName).toContain("webm")
      expect(probed.video).toMatchObject({ codec: "vp9", width: 256, height: 144, frames: 10 })
      const [first] = yield* colourAt(video.bytes, 0)
      const [last] = yield* colourAt(video.bytes, 0.9)
      expect(first!).toBeGreaterThan(last!)
    })))

  it.scoped("refuses at import an odd size and an unknown motion", () =>
    withVideo(Effect.gen(function*() {
      const error = yield* run(oneNode("video.fromImage", { width: 321, motion: "spin" }), {
        in0: "http://x.test/a.png"
      })
        .pipe(Effect.flip)
      expect(error._tag).toBe("InvalidAppDefinition")
      expect(error.message).toContain("config.width: must be an even number")
      expect(error.message).toContain("config.motion")
    })))

  it.scoped("a URL that is not an image fails as image inputs do", () =>
    withVideo(Effect.gen(function*() {
      const origin = yield* serving({ "/page": { type: "text/html", bytes: new TextEncoder().encode("<p>hi</p>") } })
      const message = yield* failureOf(oneNode("video.fromImage", {}), { in0: origin.url("/page") })
      expect(message).toBe(
        "node 'work' (video.fromImage) failed: not an image: the URL answered with content type text/html"
      )
    })))
})

describe("video.slideshow", () => {
  it.scoped("images in edge order, each for its slide, crossfading into the next", () =>
    withVideo(Effect.gen(function*() {
      const solid = (r: number, g: number, b: number) =>
        Effect.promise(() =>
          sharp({ create: { width: 400, height: 300, channels: 3, background: { r, g, b } } }).png().toBuffer()
        )
      const origin = yield* serving({
        "/red.png": { type: "image/png", bytes: yield* solid(255, 0, 0) },
        "/green.png": { type: "image/png", bytes: yield* solid(0, 255, 0) },
        "/blue.png": { type: "image/png", bytes: yield* solid(0, 0, 255) }
      })
      const video = yield* resultOf(
        oneNode("video.slideshow", { width: 160, height: 120, slide: 1.5, transition: 0.5, fps: 20 }, { inputs: 3 }),
        { in0: origin.url("/red.png"), in1: origin.url("/green.png"), in2: origin.url("/blue.png") }
      )
      const probed = yield* ffprobe(video.bytes)
      // 3 × 1.5 s less 2 crossfades of 0.5 s.
      expect(probed.duration).toBeCloseTo(3.5, 1)
      expect(probed.video).toMatchObject({ codec: "h264", width: 160, height: 120, frames: 70 })
      const red = yield* colourAt(video.bytes, 0.5)
      const fading = yield* colourAt(video.bytes, 1.25)
      const green = yield* colourAt(video.bytes, 1.75)
      const blue = yield* colourAt(video.bytes, 3)
      expect(red[0]!).toBeGreaterThan(200)
      expect(red[1]!).toBeLessThan(40)
      expect(fading[0]!).toBeGreaterThan(60)
      expect(fading[1]!).toBeGreaterThan(60)
      expect(green[1]!).toBeGreaterThan(200)
      expect(green[0]!).toBeLessThan(40)
      expect(blue[2]!).toBeGreaterThan(200)
      expect(blue[1]!).toBeLessThan(40)
    })))

  it.scoped("refuses at import a transition as long as the slide", () =>
    withVideo(Effect.gen(function*() {
      const error = yield* run(oneNode("video.slideshow", { slide: 1, transition: 1 }, { inputs: 2 }), {}).pipe(
        Effect.flip
      )
      expect(error.message).toContain("transition (1 s) must be shorter than slide (1 s)")
    })))
})

describe("video.thumbnail", () => {
  it.scoped("the frame at the asked time, scaled and encoded (a video URL accepted as video)", () =>
    withVideo(Effect.gen(function*() {
      const origin = yield* serving({ "/clip.mp4": { type: "video/mp4", bytes: yield* redThenBlue } })
      const at = (seconds: number) =>
        resultOf(
          oneNode("video.thumbnail", { at: seconds, width: 160, format: "png" }, {
            accept: ["video"],
            output: "image"
          }),
          { in0: origin.url("/clip.mp4") }
        )
      const early = yield* at(0.5)
      const late = yield* at(1.5)
      expect(early.contentType).toBe("image/png")
      for (const [image, colour] of [[early, "red"], [late, "blue"]] as const) {
        const meta = yield* Effect.promise(() => sharp(image.bytes).metadata())
        expect([meta.format, meta.width, meta.height]).toEqual(["png", 160, 120])
        const { channels } = yield* Effect.promise(() => sharp(image.bytes).stats())
        const [r, , b] = channels.map((c) => c.mean)
        expect(colour === "red" ? r! > 200 && b! < 40 : b! > 200 && r! < 40, `${colour}: ${r}, ${b}`).toBe(true)
      }
    })))

  it.scoped("a time past the end, and a file that is no video, fail saying so", () =>
    withVideo(Effect.gen(function*() {
      const origin = yield* serving({
        "/clip.mp4": { type: "video/mp4", bytes: yield* redThenBlue },
        "/fake.mp4": { type: "video/mp4", bytes: new TextEncoder().encode("not a video at all") }
      })
      const thumbnail = oneNode("video.thumbnail", { at: 5 }, { accept: ["video"], output: "image" })
      // The container lasts a little over 2 s: the AAC track's priming.
      expect(yield* failureOf(thumbnail, { in0: origin.url("/clip.mp4") })).toMatch(
        /^node 'work' \(video\.thumbnail\) failed: no thumbnail could be taken: the video lasts 2(\.\d+)? s, so it has no frame at 5 s$/
      )
      expect(yield* failureOf(thumbnail, { in0: origin.url("/fake.mp4") })).toBe(
        "node 'work' (video.thumbnail) failed: no thumbnail could be taken: the file is not a video ffmpeg can read"
      )
    })))

  it.scoped("an image given where video is needed is refused", () =>
    withVideo(Effect.gen(function*() {
      const origin = yield* serving({ "/a.png": { type: "image/png", bytes: yield* testImage(20, 20) } })
      const message = yield* failureOf(
        oneNode("video.thumbnail", {}, { accept: ["image", "video"], output: "image" }),
        { in0: origin.url("/a.png") }
      )
      expect(message).toBe(
        "node 'work' (video.thumbnail) failed: not a video: the URL answered with content type image/png"
      )
    })))
})

describe("video.convert", () => {
  it.scoped("MP4 with sound becomes WebM (VP9, Opus) of the same size", () =>
    withVideo(Effect.gen(function*() {
      const origin = yield* serving({ "/clip.mp4": { type: "video/mp4", bytes: yield* redThenBlue } })
      const video = yield* resultOf(oneNode("video.convert", { format: "webm" }, { accept: ["video"] }), {
        in0: origin.url("/clip.mp4")
      })
      expect(video.contentType).toBe("video/webm")
      const probed = yield* ffprobe(video.bytes)
      expect(probed.video).toMatchObject({ codec: "vp9", width: 320, height: 240 })
      expect(probed.audio).toEqual({ codec: "opus" })
      expect(probed.duration).toBeCloseTo(2, 0)
    })))

  it.scoped("WebM becomes a smaller faststart MP4 (H.264, AAC) at another rate; audio: false drops the sound", () =>
    withVideo(Effect.gen(function*() {
      const origin = yield* serving({ "/clip.mp4": { type: "video/mp4", bytes: yield* redThenBlue } })
      const webm = yield* resultOf(oneNode("video.convert", { format: "webm" }, { accept: ["video"] }), {
        in0: origin.url("/clip.mp4")
      })
      const back = yield* serving({ "/clip.webm": { type: "video/webm", bytes: webm.bytes } })
      const mp4 = yield* resultOf(
        oneNode("video.convert", { format: "mp4", width: 160, fps: 10 }, { accept: ["video"] }),
        {
          in0: back.url("/clip.webm")
        }
      )
      const probed = yield* ffprobe(mp4.bytes)
      expect(probed.video).toMatchObject({ codec: "h264", width: 160, height: 120, fps: 10 })
      expect(probed.audio).toEqual({ codec: "aac" })
      expect(isFastStart(mp4.bytes)).toBe(true)
      const silent = yield* resultOf(oneNode("video.convert", { format: "mp4", audio: false }, { accept: ["video"] }), {
        in0: origin.url("/clip.mp4")
      })
      expect((yield* ffprobe(silent.bytes)).audio).toBeUndefined()
    })))
})
