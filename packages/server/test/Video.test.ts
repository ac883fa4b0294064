/**
 * Video through the built `appexec` command, black-box over HTTP: `serve` on a temp data
 * directory and port 0 runs the Ken Burns example app from a prompt (the compiled command finds
 * the ffmpeg binary of `@ffmpeg-installer/ffmpeg`, which stays outside the bundle); its `video`
 * output downloads as an MP4 that ffprobe reads with the app's duration and size, answers a
 * `Range` request with 206 and the asked bytes, and `HEAD` with its length and type.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { execFile } from "node:child_process"
import { writeFileSync } from "node:fs"
import { createRequire } from "node:module"
import { join } from "node:path"
import { startServe, tempDataDir } from "./support/ServeProcess.js"

const ffprobePath = (createRequire(import.meta.url)("@ffprobe-installer/ffprobe") as { path: string }).path

const json = (url: string, init: RequestInit = {}) =>
  Effect.promise(async () => {
    const response = await fetch(url, init)
    // Fields are checked one by one below; the shapes are the API's, tested in @appexec/http.
    return { status: response.status, body: (await response.json()) as any }
  })

const fetched = (url: string, init: RequestInit = {}) =>
  Effect.promise(async () => {
    const response = await fetch(url, init)
    return { status: response.status, headers: response.headers, bytes: new Uint8Array(await response.arrayBuffer()) }
  })

/** What ffprobe reads of the video file at `path`. */
const ffprobe = (path: string) =>
  Effect.async<{ streams: Array<Record<string, unknown>>; format: Record<string, unknown> }, Error>((resume) => {
    execFile(
      ffprobePath,
      ["-v", "error", "-show_streams", "-show_format", "-of", "json", path],
      (error, stdout) => resume(error === null ? Effect.succeed(JSON.parse(stdout)) : Effect.fail(error))
    )
  })

/** Starts the Ken Burns app from a prompt on `serve` and long-polls it to its end. */
const runKenBurns = (serve: { readonly baseUrl: string; readonly key: string }) =>
  Effect.gen(function*() {
    const headers = { "x-api-key": serve.key }
    const apps = yield* json(`${serve.baseUrl}/v1/apps?search=ken%20burns`, { headers })
    const app = apps.body.data.find((a: { name: string }) => a.name === "Ken Burns")
    expect(app, JSON.stringify(apps.body)).toBeDefined()
    const started = yield* json(`${serve.baseUrl}/v1/apps/${app.appId}/executions`, {
      method: "POST",
      headers: { ...headers, "content-type": "application/json" },
      body: JSON.stringify({ inputs: { prompt: "A harbour at dawn" } })
    })
    expect(started.status).toBe(202)
    const executionId: string = started.body.data.executionId
    // Long polling: each request is answered at the execution's end or after 30 s.
    let execution: any
    for (let attempt = 0; attempt < 8; attempt++) {
      execution = (yield* json(`${serve.baseUrl}/v1/executions/${executionId}`, {
        headers: { ...headers, prefer: "wait=30" }
      })).body.data
      if (execution.status !== "queued" && execution.status !== "running") break
    }
    return { executionId, execution }
  })

describe("appexec serve: video", () => {
  it.live(
    "the Ken Burns app's video downloads as a 5 s 1280×720 MP4, by range and by HEAD too",
    () =>
      Effect.gen(function*() {
        const dataDir = yield* tempDataDir
        const serve = yield* startServe(dataDir)
        const { execution, executionId } = yield* runKenBurns(serve)
        expect(execution.errorMessage, serve.output.stderr).toBeNull()
        expect(execution.status).toBe("completed")
        const output = execution.outputs.find((o: { id: string }) => o.id === "video")
        expect(output).toMatchObject({ type: "video", status: "completed", label: "Video" })
        const url: string = output.value
        expect(url).toMatch(new RegExp(`^${serve.baseUrl}/media/executions/${executionId}/\\w+-video\\.mp4\\?exp=`))

        const whole = yield* fetched(url)
        expect(whole.status).toBe(200)
        expect(whole.headers.get("content-type")).toBe("video/mp4")
        const file = join(dataDir, "downloaded.mp4")
        writeFileSync(file, whole.bytes)
        const probed = yield* ffprobe(file)
        expect(probed.streams).toHaveLength(1)
        expect(probed.streams[0]).toMatchObject({ codec_name: "h264", width: 1280, height: 720, pix_fmt: "yuv420p" })
        expect(Number(probed.format.duration)).toBeCloseTo(5, 1)

        const range = yield* fetched(url, { headers: { range: "bytes=0-99" } })
        expect(range.status).toBe(206)
        expect(range.headers.get("content-range")).toBe(`bytes 0-99/${whole.bytes.length}`)
        expect(range.headers.get("content-type")).toBe("video/mp4")
        expect(range.bytes).toEqual(whole.bytes.subarray(0, 100))

        const head = yield* fetched(url, { method: "HEAD" })
        expect(head.status).toBe(200)
        expect(head.headers.get("content-length")).toBe(String(whole.bytes.length))
        expect(head.headers.get("content-type")).toBe("video/mp4")
        expect(head.headers.get("accept-ranges")).toBe("bytes")
        expect(head.bytes).toHaveLength(0)

        const poster = execution.outputs.find((o: { id: string }) => o.id === "poster")
        const frame = yield* fetched(poster.value)
        expect(frame.headers.get("content-type")).toBe("image/jpeg")
      }).pipe(Effect.scoped),
    180_000
  )

  it.live(
    "serve reads the video limits from APPEXEC_VIDEO_*: a video longer than allowed fails, saying so",
    () =>
      Effect.gen(function*() {
        const serve = yield* startServe(yield* tempDataDir, [], { APPEXEC_VIDEO_MAX_SECONDS: "2" })
        const { execution } = yield* runKenBurns(serve)
        expect(execution.status).toBe("failed")
        expect(execution.errorMessage).toBe(
          "node \"Zoom\" ('zoom', video.fromImage) failed: the video could not be made: 5 s is longer than the 2 s a video may last on this instance"
        )
      }).pipe(Effect.scoped),
    60_000
  )
})
