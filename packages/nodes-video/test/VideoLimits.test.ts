/**
 * The video nodes held to their limits, on the real ffmpeg: what ffmpeg reads (its demuxer forced,
 * local files only), the settings' bounds on length, frame size and bytes, the settings read from
 * the environment, the binary that runs, and ffmpeg killed on the time limit and on interruption,
 * its files removed.
 */
import { Ids } from "@appexec/api"
import { NodeType } from "@appexec/core"
import { NodesSettings } from "@appexec/nodes"
import { VideoFromImage } from "@appexec/nodes-video"
import { describe, expect, it } from "@effect/vitest"
import { ConfigProvider, Deferred, Duration, Effect, Either, Exit, Fiber, TestClock } from "effect"
import { mkdtempSync, readdirSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { testImage } from "../../nodes/test/support/Images.js"
import { failureOf, oneNode, serving } from "../../nodes/test/support/OneNode.js"
import { commandOf, groupOf } from "../../nodes/test/support/Processes.js"
import { alive, makeVideo, processesIn, redThenBlue } from "./support/Video.js"
import { disc, layer, withVideo } from "./support/VideoInstance.js"

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
      VideoFromImage.videoFromImage.compile({ width: 1280, height: 720, duration: 60 }, {
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
      log: () => Effect.void,
      preview: () => Effect.void,
      partial: () => Effect.void
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
