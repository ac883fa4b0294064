/**
 * The OCR worker threads on their own: a reading on a real thread, readings beyond the threads
 * waiting in order on a reused thread, and a reading interrupted or timed out ending its thread
 * while the next reading starts a fresh one; an idle thread ended after `idleTimeout`. Waits are
 * on the pool's stats (`changes`), time is the `TestClock`'s.
 */
import { OcrPool, OcrSettings, Reading } from "@appexec/nodes-ocr"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Either, Exit, Fiber, Layer, Stream, TestClock } from "effect"
import { decode } from "../src/internal/Decoding.js"
import * as Languages from "../src/Languages.js"
import { textImage, wordsOf } from "./support/Images.js"

const english = Either.getOrThrow(Languages.resolve("eng"))

const pool = (settings: Partial<OcrSettings.Settings> = {}) =>
  OcrPool.layer.pipe(Layer.provideMerge(OcrSettings.layer({ threads: 1, ...settings })))

/** Waits until the pool's stats satisfy `test`, and answers them. */
const until = (test: (stats: OcrPool.Stats) => boolean) =>
  Effect.flatMap(
    OcrPool.OcrPool,
    (ocr) =>
      ocr.changes.pipe(
        Stream.filter(test),
        Stream.runHead,
        Effect.map((found) => found._tag === "Some" ? found.value : undefined)
      )
  )

const LINES = ["The quick brown fox jumps", "over the lazy dog near", "Harbour Road 14"]

/** A small image of `LINES`, decoded for the threads. */
const small = Effect.flatMap(
  textImage(LINES, { width: 900, height: 300, size: 36 }),
  (bytes) => decode(bytes, 25_000_000)
)

/** A page of dense text, whose reading takes a second or more. */
const page = Effect.flatMap(
  textImage(
    Array.from({ length: 22 }, (_, i) => `Line ${i + 1}: the quick brown fox jumps over the lazy dog again`),
    { width: 1400, height: 1100, size: 26 }
  ),
  (bytes) => decode(bytes, 25_000_000)
)

const textOf = (found: ReadonlyArray<Reading.FoundLine>) =>
  Reading.make({ found, minConfidence: 0.45, language: "eng", width: 0, height: 0 }).text

describe("OcrPool", () => {
  it.scoped("reads on a worker thread every word of text set from SVG, with boxes and confidences", () =>
    Effect.gen(function*() {
      const { image } = yield* small
      const found = yield* (yield* OcrPool.OcrPool).read(image, { language: english })
      expect(wordsOf(textOf(found))).toEqual(wordsOf(LINES.join(" ")))
      expect(found).toHaveLength(3)
      for (const word of found.flatMap((line) => line.words)) {
        expect(word.confidence).toBeGreaterThan(0.8)
        expect(word.box.x + word.box.width).toBeLessThanOrEqual(900)
        expect(word.box.y + word.box.height).toBeLessThanOrEqual(300)
      }
      expect(yield* (yield* OcrPool.OcrPool).stats).toEqual({ live: 1, reading: 0, waiting: 0, started: 1, stopped: 0 })
    }).pipe(Effect.provide(pool())))

  it.scoped("readings beyond the threads wait in order, on the one thread, reused", () =>
    Effect.gen(function*() {
      const ocr = yield* OcrPool.OcrPool
      const { image } = yield* small
      const readings = yield* Effect.fork(
        Effect.all(Array.from({ length: 3 }, () => ocr.read(image, { language: english })), {
          concurrency: "unbounded"
        })
      )
      expect(yield* until((s) => s.reading === 1 && s.waiting === 2)).toBeDefined()
      const all = yield* Fiber.join(readings)
      expect(all.map(textOf)).toEqual([textOf(all[0]!), textOf(all[0]!), textOf(all[0]!)])
      expect(yield* ocr.stats).toEqual({ live: 1, reading: 0, waiting: 0, started: 1, stopped: 0 })
    }).pipe(Effect.provide(pool())))

  it.scoped("an interrupted reading ends its thread; the next reading starts a fresh one and reads", () =>
    Effect.gen(function*() {
      const ocr = yield* OcrPool.OcrPool
      const long = yield* Effect.fork(ocr.read((yield* page).image, { language: english }))
      yield* until((s) => s.reading === 1)
      yield* Fiber.interrupt(long)
      expect(yield* until((s) => s.live === 0)).toMatchObject({ started: 1, stopped: 1, reading: 0 })
      const found = yield* ocr.read((yield* small).image, { language: english })
      expect(wordsOf(textOf(found))).toEqual(wordsOf(LINES.join(" ")))
      expect(yield* ocr.stats).toEqual({ live: 1, reading: 0, waiting: 0, started: 2, stopped: 1 })
    }).pipe(Effect.provide(pool())))

  it.scoped("a reading past the timeout fails saying so and ends its thread; the pool reads on", () =>
    Effect.gen(function*() {
      const ocr = yield* OcrPool.OcrPool
      const long = yield* Effect.fork(ocr.read((yield* page).image, { language: english }))
      yield* until((s) => s.reading === 1)
      yield* TestClock.adjust("30 seconds")
      const exit = yield* Fiber.await(long)
      expect(exit).toEqual(
        Exit.fail(expect.objectContaining({ reason: "timeout", message: "reading the text took longer than 30 s" }))
      )
      expect(yield* until((s) => s.live === 0)).toMatchObject({ stopped: 1 })
      expect(wordsOf(textOf(yield* ocr.read((yield* small).image, { language: english })))).toContain("harbour")
    }).pipe(Effect.provide(pool({ timeout: "30 seconds" }))))

  it.scoped("a thread unused for idleTimeout is ended, its memory freed; a reading then starts another", () =>
    Effect.gen(function*() {
      const ocr = yield* OcrPool.OcrPool
      const { image } = yield* small
      yield* ocr.read(image, { language: english })
      expect((yield* ocr.stats).live).toBe(1)
      yield* TestClock.adjust("10 minutes")
      expect(yield* until((s) => s.live === 0)).toMatchObject({ started: 1, stopped: 0 })
      yield* ocr.read(image, { language: english })
      expect(yield* ocr.stats).toMatchObject({ live: 1, started: 2 })
    }).pipe(Effect.provide(pool({ idleTimeout: "5 minutes" }))))
})
