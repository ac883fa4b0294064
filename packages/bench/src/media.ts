/**
 * Media benchmark (`npm run bench -- media`), issue 30's figures beside the uploads ones:
 * - the encode: one 1920×1080, 5 s `video.fromImage` (zoom-in, 25 fps, MP4 H.264) of a detailed
 *   1920×1080 JPEG, run through the engine in this process (memory storage, one worker): the
 *   time from start to completion and the CPU it took, of ffmpeg (the reaped children's time in
 *   `/proc/self/stat`) and of this process (sharp, the engine), each the mean of `RUNS` runs
 *   after one warm-up;
 * - the media route: a 20 MiB MP4 (an upload: an `ftyp` box, then random bytes) served by the
 *   compiled `appexec serve` from its signed URL, with the file store and with `--media s3://…`
 *   on a local s3rver: whole downloads (`WHOLE` of them, 2 at a time) in MB/s, and a player's
 *   pattern of 1 MiB `Range` requests at random offsets (`RANGES` of them, 4 at a time) in
 *   requests/s and MB/s with their p50 and p99 latency. Every answer is checked (200 with the
 *   whole length, 206 with the asked one).
 */
import { Appexec } from "@appexec/core"
import { TestS3rver } from "@appexec/testing"
import { Effect } from "effect"
import { randomBytes } from "node:crypto"
import sharp from "sharp"
import type { Benchmark } from "./Benchmark.js"
import * as MediaInstance from "./MediaInstance.js"
import * as Percentile from "./Percentile.js"
import * as ProcessCpu from "./ProcessCpu.js"
import * as AppexecServer from "./servers/appexec.js"
import * as PhotoOrigin from "./servers/photo.js"
import * as TempDir from "./TempDir.js"

const RUNS = 3
const SIZE = 20 * 1024 * 1024
const MIB = 1024 * 1024
const WHOLE = 10
const RANGES = 400

const kenBurns = {
  name: "Ken Burns 1080p",
  public: true,
  nodes: [
    { id: "image", type: "input.url", config: { name: "image", required: true } },
    {
      id: "video",
      type: "video.fromImage",
      config: { width: 1920, height: 1080, duration: 5, fps: 25, motion: "zoom-in", format: "mp4" }
    },
    { id: "out", type: "output.video" }
  ],
  edges: [{ source: "image", target: "video" }, { source: "video", target: "out" }]
}

/** A local origin serving a detailed 1920×1080 JPEG (noise under shapes: x264 has work to do). */
const origin = PhotoOrigin.serve(async () => {
  const noise = await sharp(randomBytes(480 * 270 * 3), { raw: { width: 480, height: 270, channels: 3 } })
    .resize(1920, 1080, { kernel: "nearest" })
    .png()
    .toBuffer()
  const jpeg = await sharp(noise)
    .composite([{
      input: Buffer.from(
        "<svg width=\"1920\" height=\"1080\"><circle cx=\"960\" cy=\"540\" r=\"400\" fill=\"#ffcc00\"/>" +
          "<rect x=\"100\" y=\"100\" width=\"500\" height=\"300\" fill=\"#3366aa\"/></svg>"
      )
    }])
    .jpeg({ quality: 85 })
    .toBuffer()
  return jpeg
})

/** Mean seconds, ffmpeg CPU seconds and in-process CPU seconds of one 1080p 5 s encode. */
const encode = Effect.gen(function*() {
  const photo = yield* origin
  const appexec = yield* Appexec.Appexec
  const app = yield* appexec.apps.import(kenBurns)
  const { key } = yield* appexec.keys.create({ workspace: "bench" })
  const principal = yield* appexec.keys.authenticate({ "x-api-key": key })
  const once = Effect.gen(function*() {
    const started = yield* appexec.executions.start(principal, app.appId, { image: photo.url })
    const done = yield* appexec.executions.await(started.executionId)
    if (done.status !== "completed") return yield* Effect.dieMessage(`the encode failed: ${done.errorMessage}`)
  })
  yield* once // warm-up: ffmpeg's binary and sharp loaded
  const t0 = performance.now()
  const children0 = ProcessCpu.ofReapedChildren()
  const self0 = process.cpuUsage()
  for (let i = 0; i < RUNS; i++) yield* once
  const self = process.cpuUsage(self0)
  return {
    seconds: (performance.now() - t0) / 1000 / RUNS,
    ffmpegCpu: (ProcessCpu.ofReapedChildren() - children0) / 1e6 / RUNS,
    nodeCpu: (self.user + self.system) / 1e6 / RUNS
  }
}).pipe(Effect.scoped, Effect.provide(MediaInstance.layer))

/** A 20 MiB body an upload takes as `video/mp4`: an `ftyp` box (isom), then random bytes. */
const video = (): Uint8Array<ArrayBuffer> => {
  const bytes = new Uint8Array(new ArrayBuffer(SIZE))
  bytes.set(randomBytes(SIZE))
  bytes.set([0, 0, 0, 0x18, ...Buffer.from("ftypisom"), 0, 0, 2, 0, ...Buffer.from("isomiso2mp41")])
  return bytes
}

/** Uploads `body` and answers its signed URL on the instance. */
const upload = (serve: AppexecServer.Serve, body: Uint8Array<ArrayBuffer>) =>
  Effect.promise(async () => {
    const response = await fetch(`${serve.baseUrl}/v1/uploads`, {
      method: "POST",
      headers: { "x-api-key": serve.key, "content-type": "video/mp4" },
      body
    })
    const answer = await response.json() as { data?: { url: string } }
    if (response.status !== 201 || answer.data === undefined) {
      throw new Error(`upload answered ${response.status}: ${JSON.stringify(answer)}`)
    }
    return answer.data.url
  })

/** Runs `count` requests `concurrency` at a time; the seconds taken and each request's milliseconds. */
const drive = async (count: number, concurrency: number, one: (i: number) => Promise<void>) => {
  const latencies: Array<number> = []
  let next = 0
  const started = performance.now()
  await Promise.all(Array.from({ length: concurrency }, async () => {
    while (next < count) {
      const i = next++
      const t = performance.now()
      await one(i)
      latencies.push(performance.now() - t)
    }
  }))
  return { seconds: (performance.now() - started) / 1000, latencies }
}

/** The media route's figures for one served instance. */
const route = (serve: AppexecServer.Serve, store: string, report: Parameters<Benchmark["run"]>[0]) =>
  Effect.gen(function*() {
    const url = yield* upload(serve, video())
    const whole = yield* Effect.promise(() =>
      drive(WHOLE, 2, async () => {
        const response = await fetch(url)
        const bytes = await response.arrayBuffer()
        if (response.status !== 200 || bytes.byteLength !== SIZE) throw new Error(`whole download ${response.status}`)
      })
    )
    yield* report({
      name: `media route 20 MiB whole downloads (${store})`,
      value: (WHOLE * SIZE) / 1e6 / whole.seconds,
      unit: "MB/s"
    })
    const ranges = yield* Effect.promise(() =>
      drive(RANGES, 4, async () => {
        const start = Math.floor(Math.random() * (SIZE - MIB))
        const response = await fetch(url, { headers: { range: `bytes=${start}-${start + MIB - 1}` } })
        const bytes = await response.arrayBuffer()
        if (response.status !== 206 || bytes.byteLength !== MIB) throw new Error(`range ${response.status}`)
      })
    )
    yield* report({
      name: `media route 1 MiB ranges of 20 MiB (${store})`,
      value: RANGES / ranges.seconds,
      unit: "requests/s"
    })
    yield* report({
      name: `media route 1 MiB ranges of 20 MiB (${store}) throughput`,
      value: (RANGES * MIB) / 1e6 / ranges.seconds,
      unit: "MB/s"
    })
    const sorted = [...ranges.latencies].sort((a, b) => a - b)
    yield* report({ name: `media route 1 MiB range p50 (${store})`, value: Percentile.of(sorted, 50), unit: "ms" })
    yield* report({ name: `media route 1 MiB range p99 (${store})`, value: Percentile.of(sorted, 99), unit: "ms" })
  })

export const benchmark: Benchmark = {
  name: "media",
  run: (report) =>
    Effect.gen(function*() {
      const figures = yield* encode
      yield* report({ name: "video.fromImage 1920x1080 5 s mp4 encode", value: figures.seconds, unit: "s" })
      yield* report({ name: "video.fromImage 1920x1080 5 s mp4 ffmpeg CPU", value: figures.ffmpegCpu, unit: "s" })
      yield* report({ name: "video.fromImage 1920x1080 5 s mp4 node CPU", value: figures.nodeCpu, unit: "s" })
      const flags = ["--max-upload", "32MiB", "--rate-limit", "100000", "--no-console"]
      yield* Effect.scoped(Effect.gen(function*() {
        const data = yield* TempDir.make("media")
        yield* route(yield* AppexecServer.serve(["--data", data, ...flags]), "file store", report)
      }))
      yield* Effect.scoped(Effect.gen(function*() {
        const bucket = "appexec-bench"
        const s3 = yield* TestS3rver.start(bucket)
        const data = yield* TempDir.make("media-s3")
        const serve = yield* AppexecServer.serve(
          ["--data", data, "--media", `s3://${bucket}/media-bench`, "--media-endpoint", s3.endpoint, ...flags],
          s3.env
        )
        yield* route(serve, "s3rver", report)
      }))
    })
}
