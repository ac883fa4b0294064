/**
 * The video nodes on the real ffmpeg of `@ffmpeg-installer/ffmpeg`, each result decoded for real
 * (ffprobe: container, codecs, duration, size; frames' colours; sharp for images), in an instance
 * whose runs keep their temporary directories under a directory of the test, checked empty after.
 */
import { Ids } from "@appexec/api"
import { ExecutionReports, NodeType } from "@appexec/core"
import { NodesSettings } from "@appexec/nodes"
import { videoFromImage } from "@appexec/nodes/VideoFromImage"
import { describe, expect, it } from "@effect/vitest"
import { ConfigProvider, Deferred, Duration, Effect, Either, Exit, Fiber, TestClock } from "effect"
import { mkdtempSync, readdirSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import sharp from "sharp"
import * as FakeOrigin from "./support/FakeOrigin.js"
import { download, layer, run, testImage } from "./support/Instance.js"
import { commandOf, groupOf } from "./support/Processes.js"
import { alive, colourAt, ffprobe, isFastStart, makeVideo, processesIn, redThenBlue } from "./support/Video.js"

/** Runs `body` on an instance whose video work happens under a fresh directory, which must be empty after. */
const withVideo = <A, E, R>(
  body: Effect.Effect<A, E, R>,
  video: Partial<NodesSettings.VideoLimits> = {}
) =>
  Effect.acquireUseRelease(
    Effect.sync(() => mkdtempSync(join(tmpdir(), "appexec-video-nodes-"))),
    (temp) =>
      body.pipe(
        Effect.provide(layer({ settings: { video: { tempDir: temp, ...video } } })),
        Effect.tap(() => expect(readdirSync(temp)).toEqual([]))
      ),
    (temp) => Effect.sync(() => rmSync(temp, { recursive: true, force: true }))
  )

/** A black 800×600 PNG with a white disc in its middle: a zoom into it shows more white. */
const disc = Effect.promise(() =>
  sharp(
    Buffer.from(
      `<svg xmlns="http://www.w3.org/2000/svg" width="800" height="600"><rect width="800" height="600" fill="#000"/><circle cx="400" cy="300" r="90" fill="#fff"/></svg>`
    )
  )
    .png()
    .toBuffer()
)

/** An app: a URL input (accepting `accept`) through `type` (with `config`) to an output of `output` kind. */
const oneNode = (
  type: string,
  config: Record<string, unknown>,
  options: { readonly accept?: ReadonlyArray<string>; readonly output?: "video" | "image"; readonly inputs?: number } =
    {}
) => {
  const inputs = Array.from({ length: options.inputs ?? 1 }, (_, i) => `in${i}`)
  return {
    name: `One ${type}`,
    nodes: [
      ...inputs.map((name) => ({
        id: name,
        type: "input.url",
        config: { name, required: true, accept: options.accept ?? ["image"] }
      })),
      { id: "work", type, config },
      { id: "result", type: `output.${options.output ?? "video"}`, label: "Result" }
    ],
    edges: [...inputs.map((source) => ({ source, target: "work" })), { source: "work", target: "result" }]
  }
}

/** Runs `definition` on `inputs` and answers the completed output's bytes and content type, and its URL. */
const resultOf = (definition: unknown, inputs: Record<string, string>) =>
  Effect.gen(function*() {
    const done = yield* run(definition, inputs)
    expect(done.errorMessage).toBeNull()
    expect(done.status).toBe("completed")
    const output = done.outputs[0]!
    return { ...(yield* download(output.value!)), url: output.value!, type: output.type, executionId: done.executionId }
  })

/** Runs `definition` on `inputs` and answers its error message, the execution having failed. */
const failureOf = (definition: unknown, inputs: Record<string, string>) =>
  Effect.gen(function*() {
    const done = yield* run(definition, inputs)
    expect(done.status).toBe("failed")
    return done.errorMessage!
  })

const serving = (files: Record<string, { readonly type: string; readonly bytes: Uint8Array }>) =>
  FakeOrigin.start(
    Object.fromEntries(
      Object.entries(files).map(([path, file]) => [path, { headers: { "content-type": file.type }, body: file.bytes }])
    )
  )

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

describe("video read safely", () => {
  it.scoped("a playlist posing as MP4 is not a video: ffmpeg reads no file it names", () =>
    withVideo(Effect.gen(function*() {
      // A local video that an HLS playlist names: read as a playlist, it would become the output.
      const local = mkdtempSync(join(tmpdir(), "appexec-video-local-"))
      yield* Effect.addFinalizer(() => Effect.sync(() => rmSync(local, { recursive: true, force: true })))
      writeFileSync(
        join(local, "private.ts"),
        yield* makeVideo(["-f", "lavfi", "-i", "color=c=red:s=64x48:r=25:d=1", "-f", "mpegts"], "ts")
      )
      const playlist = `#EXTM3U\n#EXT-X-TARGETDURATION:1\n#EXTINF:1.0,\nfile://${
        join(local, "private.ts")
      }\n#EXT-X-ENDLIST\n`
      const origin = yield* serving({ "/clip.mp4": { type: "video/mp4", bytes: new TextEncoder().encode(playlist) } })
      expect(
        yield* failureOf(oneNode("video.convert", { format: "mp4" }, { accept: ["video"] }), {
          in0: origin.url("/clip.mp4")
        })
      ).toBe(
        "node 'work' (video.convert) failed: the video could not be converted: the file is not a video ffmpeg can read"
      )
    })))

  it.scoped("a video type other than MP4, QuickTime, WebM or Matroska is refused", () =>
    withVideo(Effect.gen(function*() {
      const origin = yield* serving({ "/clip.avi": { type: "video/x-msvideo", bytes: yield* redThenBlue } })
      expect(
        yield* failureOf(oneNode("video.thumbnail", {}, { accept: ["video"], output: "image" }), {
          in0: origin.url("/clip.avi")
        })
      ).toBe(
        "node 'work' (video.thumbnail) failed: no thumbnail could be taken: video/x-msvideo is not a video type read here (MP4, QuickTime, WebM, Matroska)"
      )
    })))
})

describe("video limits", () => {
  it.scoped("a video longer than video.maxSeconds is neither made nor read", () =>
    withVideo(
      Effect.gen(function*() {
        const origin = yield* serving({
          "/a.png": { type: "image/png", bytes: yield* testImage(64, 64) },
          "/clip.mp4": { type: "video/mp4", bytes: yield* redThenBlue }
        })
        expect(yield* failureOf(oneNode("video.fromImage", { duration: 3 }), { in0: origin.url("/a.png") })).toBe(
          "node 'work' (video.fromImage) failed: the video could not be made: 3 s is longer than the 1.5 s a video may last on this instance"
        )
        expect(
          yield* failureOf(oneNode("video.convert", { format: "mp4" }, { accept: ["video"] }), {
            in0: origin.url("/clip.mp4")
          })
        ).toMatch(
          /^node 'work' \(video\.convert\) failed: the video could not be converted: 2(\.\d+)? s is longer than the 1\.5 s a video may last on this instance$/
        )
      }),
      { maxSeconds: 1.5 }
    ))

  it.scoped("a frame over video.maxPixels is refused before any work", () =>
    withVideo(
      Effect.gen(function*() {
        const origin = yield* serving({ "/a.png": { type: "image/png", bytes: yield* testImage(64, 64) } })
        expect(
          yield* failureOf(oneNode("video.fromImage", { width: 1920, height: 1080 }), { in0: origin.url("/a.png") })
        ).toBe(
          "node 'work' (video.fromImage) failed: the video could not be made: 1920×1080 is more than the 0.92 megapixels a video frame may have on this instance"
        )
      }),
      { maxPixels: 1280 * 720 }
    ))

  it.scoped("a video larger than video.maxBytes is refused, ffmpeg stopped at the limit", () =>
    withVideo(
      Effect.gen(function*() {
        const origin = yield* serving({ "/disc.png": { type: "image/png", bytes: yield* disc } })
        expect(
          yield* failureOf(oneNode("video.fromImage", { width: 640, height: 360, duration: 2 }), {
            in0: origin.url("/disc.png")
          })
        ).toBe(
          "node 'work' (video.fromImage) failed: the video could not be made: it would be larger than the 2 KiB a video may have on this instance"
        )
      }),
      { maxBytes: 2048 }
    ))
})

describe("video settings from the environment", () => {
  const read = (variables: Record<string, string>) =>
    NodesSettings.NodesSettings.pipe(
      Effect.provide(NodesSettings.layerConfig()),
      Effect.withConfigProvider(ConfigProvider.fromMap(new Map(Object.entries(variables))))
    )

  it.effect("APPEXEC_VIDEO_* and APPEXEC_FFMPEG set the limits; the others keep their defaults", () =>
    Effect.gen(function*() {
      const settings = yield* read({ APPEXEC_VIDEO_MAX_SECONDS: "30", APPEXEC_FFMPEG: "/usr/bin/ffmpeg" })
      expect(settings.video).toEqual({ ...NodesSettings.defaults.video, maxSeconds: 30, ffmpeg: "/usr/bin/ffmpeg" })
    }))

  it.effect("a value that is not a positive integer is refused, naming its variable", () =>
    Effect.gen(function*() {
      const error = yield* read({ APPEXEC_VIDEO_TIMEOUT_MS: "soon" }).pipe(Effect.flip)
      expect(String(error)).toContain("APPEXEC_VIDEO_TIMEOUT_MS")
    }))
})

describe("the ffmpeg binary", () => {
  const missing =
    "node 'work' (video.fromImage) failed: the video could not be made: ffmpeg could not be started on this instance"

  it.scoped("video.ffmpeg of the settings is the binary run", () =>
    withVideo(
      Effect.gen(function*() {
        const origin = yield* serving({ "/a.png": { type: "image/png", bytes: yield* testImage(64, 64) } })
        expect(yield* failureOf(oneNode("video.fromImage", { duration: 1 }), { in0: origin.url("/a.png") })).toBe(
          missing
        )
      }),
      { ffmpeg: "/nonexistent/ffmpeg" }
    ))

  it.scoped("APPEXEC_FFMPEG names it when the settings do not", () =>
    withVideo(
      Effect.gen(function*() {
        const origin = yield* serving({ "/a.png": { type: "image/png", bytes: yield* testImage(64, 64) } })
        expect(yield* failureOf(oneNode("video.fromImage", { duration: 1 }), { in0: origin.url("/a.png") })).toBe(
          missing
        )
      })
    ).pipe(Effect.withConfigProvider(ConfigProvider.fromMap(new Map([["APPEXEC_FFMPEG", "/nonexistent/ffmpeg"]])))))
})

describe("image.animate", () => {
  const frames = Effect.gen(function*() {
    const solid = (r: number, g: number, b: number, width = 64, height = 48) =>
      Effect.promise(() => sharp({ create: { width, height, channels: 3, background: { r, g, b } } }).png().toBuffer())
    return yield* serving({
      "/1.png": { type: "image/png", bytes: yield* solid(255, 0, 0) },
      "/2.png": { type: "image/png", bytes: yield* solid(0, 255, 0, 128, 96) },
      "/3.png": { type: "image/png", bytes: yield* solid(0, 0, 255) }
    })
  })

  for (const format of ["webp", "gif"] as const) {
    it.scoped(`frames become an animated ${format}: pages, delays, loop and each frame's colour`, () =>
      withVideo(Effect.gen(function*() {
        const origin = yield* frames
        const image = yield* resultOf(
          oneNode("image.animate", { format, delay: 200, loop: 3 }, { inputs: 3, output: "image" }),
          { in0: origin.url("/1.png"), in1: origin.url("/2.png"), in2: origin.url("/3.png") }
        )
        expect(image.contentType).toBe(`image/${format}`)
        const meta = yield* Effect.promise(() => sharp(image.bytes, { animated: true }).metadata())
        expect(meta).toMatchObject({ format, pages: 3, width: 64, pageHeight: 48, delay: [200, 200, 200], loop: 3 })
        const { data, info } = yield* Effect.promise(() =>
          sharp(image.bytes, { animated: true }).raw().toBuffer({ resolveWithObject: true })
        )
        const page = 64 * 48 * info.channels
        // Pixel (10, 24) of each page: the middle frame, twice as large, was fitted inside 64×48.
        const pixel = (
          i: number
        ) => [
          ...data.subarray(i * page + (24 * 64 + 10) * info.channels, i * page + (24 * 64 + 10) * info.channels + 3)
        ]
        expect(pixel(0)[0]!).toBeGreaterThan(200)
        expect(pixel(1)[1]!).toBeGreaterThan(200)
        expect(pixel(2)[2]!).toBeGreaterThan(200)
      })))
  }

  it.scoped("frames beyond media.maxPixels in all are refused", () =>
    Effect.gen(function*() {
      const origin = yield* frames
      const message = yield* failureOf(
        oneNode("image.animate", { width: 100, height: 100 }, { inputs: 3, output: "image" }),
        { in0: origin.url("/1.png"), in1: origin.url("/2.png"), in2: origin.url("/3.png") }
      )
      expect(message).toBe(
        "node 'work' (image.animate) failed: the animation would be too large: 3 frames of 100×100 are more than the 0.02 megapixels an image may have on this instance"
      )
    }).pipe(Effect.provide(layer({ settings: { media: { maxPixels: 20_000 } } }))))
})

describe("ffmpeg stopped: on the time limit and when the node is canceled", () => {
  /**
   * Runs `video.fromImage` alone on a long video (a minute of 1280×720) in a fresh directory,
   * forked; answers the fiber, the directory and the ids of the ffmpeg processes once ffmpeg has
   * reported its first progress (it is encoding).
   */
  const encoding = Effect.gen(function*() {
    const temp = mkdtempSync(join(tmpdir(), "appexec-video-stop-"))
    yield* Effect.addFinalizer(() => Effect.sync(() => rmSync(temp, { recursive: true, force: true })))
    const image = yield* disc
    const compiled = Either.getOrThrow(
      videoFromImage.compile({ width: 1280, height: 720, duration: 60 }, {
        id: "work",
        label: "Work",
        upstream: ["in"]
      })
    )
    if (compiled.role !== "process") throw new Error("video.fromImage is a process node")
    const started = yield* Deferred.make<void>()
    const fiber = yield* compiled.run({
      node: { id: "work", label: "Work" },
      upstream: [{ nodeId: "in", value: NodeType.NodeValue.media("image", "image/png", new Uint8Array(image)) }],
      execution: {
        executionId: Ids.ExecutionId.make("00000000-0000-4000-8000-000000000001"),
        appId: Ids.AppId.make("00000000-0000-4000-8000-000000000002"),
        workspaceId: Ids.WorkspaceId.make("00000000-0000-4000-8000-000000000003")
      },
      progress: () => Deferred.succeed(started, undefined),
      log: () => Effect.void
    }).pipe(
      Effect.provide(layer({ settings: { video: { tempDir: temp, timeoutMs: 20_000 } } })),
      Effect.fork
    )
    yield* Deferred.await(started)
    // ffmpeg, with its watchdog (`Subprocess`) beside it in a process group of their own.
    const ffmpeg = processesIn(temp).filter((pid) => commandOf(pid) === "ffmpeg")
    expect(ffmpeg).toHaveLength(1)
    expect(alive(ffmpeg[0]!)).toBe(true)
    expect(groupOf(ffmpeg[0]!)).not.toBe(groupOf(process.pid))
    expect(readdirSync(temp)).toHaveLength(1)
    return { fiber, temp, pid: ffmpeg[0]! }
  })

  it.scoped("a run longer than video.timeoutMs fails, its ffmpeg killed and its files removed", () =>
    Effect.gen(function*() {
      const { fiber, pid, temp } = yield* encoding
      yield* TestClock.adjust(Duration.seconds(20))
      const exit = yield* Fiber.await(fiber)
      expect(exit).toEqual(
        Exit.fail(
          new NodeType.NodeFailure({
            message: "the video could not be made: ffmpeg did not finish within 20 s and was stopped"
          })
        )
      )
      expect(alive(pid)).toBe(false)
      expect(processesIn(temp)).toEqual([])
      expect(readdirSync(temp)).toEqual([])
    }))

  it.scoped("an interrupted run (a canceled execution) kills its ffmpeg and removes its files", () =>
    Effect.gen(function*() {
      const { fiber, pid, temp } = yield* encoding
      yield* Fiber.interrupt(fiber)
      expect(alive(pid)).toBe(false)
      expect(processesIn(temp)).toEqual([])
      expect(readdirSync(temp)).toEqual([])
    }))
})
