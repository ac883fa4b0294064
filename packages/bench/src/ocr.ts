/**
 * OCR benchmark: `image.ocr` through a whole instance in memory (an `input.url` fetched from a
 * local origin, the image decoded and read on the OCR worker threads, its JSON output stored),
 * on two pictures of text: a 512×512 poster (the Poster's placeholder drawing of a title) and a
 * 1280×720 screenshot of 16 lines of 20-pixel text.
 *
 * Figures:
 * - per image, one execution after another on one thread: wall time from start to completion,
 *   and CPU time (every thread of the process: the reading thread, the event loop, libuv's);
 * - throughput of 1280×720 images with 1 and with 2 threads, 12 executions started at once;
 * - memory per thread: how much the process's resident memory grows when a second thread starts
 *   and reads a 1280×720 image;
 * - the event loop's delay (p50, p99, max: how late a 10 ms timer fired) while 1 and 2 threads
 *   read at full load, and for 3 s with nothing to do (what the machine's other work costs it).
 */
import { Appexec } from "@appexec/core"
import { builtinNodes } from "@appexec/nodes"
import { OcrNodes, ocrNodes, OcrPool } from "@appexec/nodes-ocr"
import { Effect, Layer } from "effect"
import { monitorEventLoopDelay } from "node:perf_hooks"
import sharp from "sharp"
import { type Benchmark, type Figure, reportLoad } from "./Benchmark.js"
import * as MediaInstance from "./MediaInstance.js"
import * as PhotoOrigin from "./servers/photo.js"

/** An instance in memory with the built-in nodes and `image.ocr` on `threads` threads. */
const instance = (threads: number) =>
  MediaInstance.make([...builtinNodes, ...ocrNodes], { workerConcurrency: 16, nodeConcurrency: 4 }).pipe(
    Layer.provideMerge(OcrNodes.layer({ threads }))
  )

/** An image URL in, the reading out. */
const readText = {
  name: "Read text",
  public: true,
  nodes: [
    { id: "image", type: "input.url", config: { name: "image", required: true } },
    { id: "ocr", type: "image.ocr" },
    { id: "lines", type: "output.json" }
  ],
  edges: [{ source: "image", target: "ocr" }, { source: "ocr", target: "lines" }]
}

const svgText = (width: number, height: number, body: string) =>
  sharp(Buffer.from(
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}">${body}</svg>`
  )).jpeg({ quality: 92 }).toBuffer()

/** The 512×512 poster: a title in white on a dark panel over a gradient. */
const poster = () =>
  svgText(
    512,
    512,
    `<defs><linearGradient id="g"><stop offset="0" stop-color="#7a2f6b"/><stop offset="1" stop-color="#1f3c7a"/></linearGradient></defs>` +
      `<rect width="512" height="512" fill="url(#g)"/><rect x="40" y="170" width="432" height="172" rx="16" fill="#000" fill-opacity="0.65"/>` +
      `<text x="256" y="245" text-anchor="middle" font-family="DejaVu Sans" font-weight="bold" font-size="48" fill="#fff">A lighthouse</text>` +
      `<text x="256" y="305" text-anchor="middle" font-family="DejaVu Sans" font-weight="bold" font-size="48" fill="#fff">at dusk (flat)</text>`
  )

/** The 1280×720 screenshot: 16 lines of 20-pixel dark text on white. */
const screenshot = () =>
  svgText(
    1280,
    720,
    `<rect width="1280" height="720" fill="#fff"/>` +
      Array.from({ length: 16 }, (_, i) =>
        `<text x="40" y="${50 + i * 40}" font-family="DejaVu Sans" font-size="20" fill="#222">` +
        `${i + 1}. Invoice 20${40 + i} for harbour goods, due on ${i + 3} March, total ${318 + i * 7}.40 EUR</text>`)
        .join("")
  )

/** Imports Read text; answers a function that runs `count` executions of it on `url` at once, to their end. */
const runner = (url: string) =>
  Effect.gen(function*() {
    const appexec = yield* Appexec.Appexec
    const app = yield* appexec.apps.import(readText)
    const { key } = yield* appexec.keys.create({ workspace: "bench" })
    const principal = yield* appexec.keys.authenticate({ "x-api-key": key })
    return (count: number) =>
      Effect.gen(function*() {
        const started = yield* Effect.forEach(
          Array.from({ length: count }),
          () => appexec.executions.start(principal, app.appId, { image: url })
        )
        const done = yield* Effect.forEach(started, (s) => appexec.executions.await(s.executionId), {
          concurrency: "unbounded"
        })
        const failed = done.find((d) => d.status !== "completed")
        if (failed !== undefined) return yield* Effect.dieMessage(`an OCR execution failed: ${failed.errorMessage}`)
      })
  })

const cpuMs = () => {
  const used = process.cpuUsage()
  return (used.user + used.system) / 1000
}

/** Wall and CPU time per image over `count` executions one after another. */
const perImage = <E>(run: (count: number) => Effect.Effect<void, E>, count: number) =>
  Effect.gen(function*() {
    const wall0 = performance.now()
    const cpu0 = cpuMs()
    for (let i = 0; i < count; i++) yield* run(1)
    return { wall: (performance.now() - wall0) / count, cpu: (cpuMs() - cpu0) / count }
  })

const rssMb = () => process.memoryUsage().rss / (1024 * 1024)

/** The event-loop delay sampler's timer, in ms; a delay is how late that timer fired. */
const RESOLUTION_MS = 10

/** The event loop's delay while threads read (p50, p99, max): how late a 10 ms timer fired. */
const reportDelay = (
  report: (figure: Figure) => Effect.Effect<void>,
  delay: ReturnType<typeof monitorEventLoopDelay>,
  threads: string
) =>
  Effect.forEach(
    [["p50", delay.percentile(50)], ["p99", delay.percentile(99)], ["max", delay.max]] as const,
    ([name, ns]) =>
      report({
        name: `ocr event loop delay ${name} (${threads})`,
        value: Math.max(0, ns / 1e6 - RESOLUTION_MS),
        unit: "ms"
      }),
    { discard: true }
  )

/** How many executions each throughput figure is measured over. */
const BURST = 12

/**
 * `BURST` 1280×720 readings at once: their throughput, and the event loop's delay meanwhile
 * (`threads` names the pool's size in the figures' names).
 */
const fullLoad = <E, R>(
  report: (figure: Figure) => Effect.Effect<void>,
  readScreen: (count: number) => Effect.Effect<unknown, E, R>,
  threads: string
) =>
  Effect.gen(function*() {
    const delay = monitorEventLoopDelay({ resolution: RESOLUTION_MS })
    delay.enable()
    const t0 = performance.now()
    yield* readScreen(BURST)
    const seconds = (performance.now() - t0) / 1000
    delay.disable()
    yield* report({ name: `ocr 1280x720 throughput (${threads})`, value: BURST / seconds, unit: "images/s" })
    yield* reportDelay(report, delay, `${threads} reading at full load`)
  })

/** The OCR benchmark. */
export const benchmark: Benchmark = {
  name: "ocr",
  run: (report: (figure: Figure) => Effect.Effect<void>) =>
    Effect.scoped(Effect.gen(function*() {
      yield* reportLoad(report, "ocr", "start")
      const small = yield* PhotoOrigin.serve(poster)
      const large = yield* PhotoOrigin.serve(screenshot)
      // The same delay with nothing to do: what the machine's other work costs the event loop.
      const idle = monitorEventLoopDelay({ resolution: RESOLUTION_MS })
      idle.enable()
      yield* Effect.promise(() => new Promise((resolve) => setTimeout(resolve, 3000)))
      idle.disable()
      yield* reportDelay(report, idle, "idle")

      // One thread: time per image, throughput, the event loop's delay.
      yield* Effect.gen(function*() {
        const readPoster = yield* runner(small.url)
        const readScreen = yield* runner(large.url)
        yield* readScreen(1)
        yield* readPoster(1)
        for (const [name, run] of [["512x512 poster", readPoster], ["1280x720 screenshot", readScreen]] as const) {
          const { cpu, wall } = yield* perImage(run, 10)
          yield* report({ name: `ocr ${name} wall per image (1 thread)`, value: wall, unit: "ms" })
          yield* report({ name: `ocr ${name} cpu per image (1 thread)`, value: cpu, unit: "ms" })
        }
        yield* fullLoad(report, readScreen, "1 thread")
      }).pipe(Effect.provide(instance(1)))

      // Two threads: throughput at full load, the event loop's delay meanwhile, memory per thread.
      yield* Effect.gen(function*() {
        const readScreen = yield* runner(large.url)
        const pool = yield* OcrPool.OcrPool
        yield* readScreen(1)
        const one = { rss: rssMb(), live: (yield* pool.stats).live }
        yield* readScreen(2)
        const two = { rss: rssMb(), live: (yield* pool.stats).live }
        yield* report({ name: "ocr memory per thread", value: (two.rss - one.rss) / (two.live - one.live), unit: "MB" })
        yield* fullLoad(report, readScreen, "2 threads")
      }).pipe(Effect.provide(instance(2)))
      yield* reportLoad(report, "ocr", "end")
    }))
}
