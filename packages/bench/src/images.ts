/**
 * Image benchmark: images per second through the whole engine (queue, worker, nodes, blob
 * store, media URLs) for two apps at 512×512, on in-memory storage with one in-process worker:
 * - poster: text → `image.placeholder` (PNG) → `output.image`;
 * - thumbnail: an `input.url` fetched from a local origin (a 1024×1024 JPEG) → `image.resize`
 *   (512×512) → `image.convert` (WebP) → `output.image`.
 * Each figure is the number of executions started at once divided by the time from the first
 * start to the last completion.
 */
import { Appexec } from "@appexec/core"
import { Effect } from "effect"
import sharp from "sharp"
import type { Benchmark, Figure } from "./Benchmark.js"
import * as MediaInstance from "./MediaInstance.js"
import * as PhotoOrigin from "./servers/photo.js"

const poster = {
  name: "Poster",
  public: true,
  nodes: [
    { id: "prompt", type: "input.text", config: { name: "prompt", required: true } },
    { id: "render", type: "image.placeholder", config: { width: 512, height: 512, format: "png" } },
    { id: "poster", type: "output.image" }
  ],
  edges: [
    { source: "prompt", target: "render" },
    { source: "render", target: "poster" }
  ]
}

const thumbnail = {
  name: "Thumbnail",
  public: true,
  nodes: [
    { id: "image", type: "input.url", config: { name: "image", required: true } },
    { id: "resize", type: "image.resize", config: { width: 512, height: 512, fit: "cover" } },
    { id: "webp", type: "image.convert", config: { format: "webp", quality: 80 } },
    { id: "thumbnail", type: "output.image" }
  ],
  edges: [
    { source: "image", target: "resize" },
    { source: "resize", target: "webp" },
    { source: "webp", target: "thumbnail" }
  ]
}

/** A local origin serving one 1024×1024 JPEG at `/photo.jpg`, closed with the scope. */
const origin = PhotoOrigin.serve(() =>
  sharp({ create: { width: 1024, height: 1024, channels: 3, background: "#3366aa" } })
    .composite([{
      input: Buffer.from(
        "<svg width=\"1024\" height=\"1024\"><circle cx=\"512\" cy=\"512\" r=\"400\" fill=\"#ffcc00\"/></svg>"
      )
    }])
    .jpeg({ quality: 85 })
    .toBuffer()
)

/** Runs `count` executions of `definition` started at once; returns images per second. */
const imagesPerSecond = (definition: unknown, count: number, inputs: (i: number) => Record<string, string>) =>
  Effect.gen(function*() {
    const appexec = yield* Appexec.Appexec
    const app = yield* appexec.apps.import(definition)
    const { key } = yield* appexec.keys.create({ workspace: "bench" })
    const principal = yield* appexec.keys.authenticate({ "x-api-key": key })
    // One warm-up run, so that sharp and the fonts are loaded before timing.
    const warm = yield* appexec.executions.start(principal, app.appId, inputs(-1))
    yield* appexec.executions.await(warm.executionId)
    const t0 = performance.now()
    const started = yield* Effect.forEach(
      Array.from({ length: count }, (_, i) => i),
      (i) => appexec.executions.start(principal, app.appId, inputs(i))
    )
    const done = yield* Effect.forEach(started, (s) => appexec.executions.await(s.executionId), {
      concurrency: "unbounded"
    })
    const seconds = (performance.now() - t0) / 1000
    const failed = done.filter((d) => d.status !== "completed")
    if (failed.length > 0) {
      return yield* Effect.dieMessage(`${failed.length} executions failed: ${failed[0]!.errorMessage}`)
    }
    return count / seconds
  })

/** How many executions each figure is measured over. */
export const COUNT = 100

/** The image benchmark. */
export const benchmark: Benchmark = {
  name: "images",
  run: (report: (figure: Figure) => Effect.Effect<void>) =>
    Effect.scoped(
      Effect.gen(function*() {
        const photo = yield* origin
        const posters = yield* imagesPerSecond(
          poster,
          COUNT,
          (i) => ({ prompt: `Poster number ${i}: a lighthouse at dusk` })
        )
        yield* report({ name: "images poster 512x512 png (memory, 1 worker)", value: posters, unit: "images/s" })
        const thumbs = yield* imagesPerSecond(thumbnail, COUNT, () => ({ image: photo.url }))
        yield* report({
          name: "images thumbnail 1024->512x512 webp (memory, 1 worker)",
          value: thumbs,
          unit: "images/s"
        })
      }).pipe(Effect.provide(MediaInstance.layer))
    )
}

/** Runs the benchmark alone, printing its figures. */
export const run = benchmark.run
