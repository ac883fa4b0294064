import { OcrPool, OcrSettings, Reading } from "@appexec/nodes-ocr"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Either, Layer } from "effect"
import { decode } from "../src/internal/Decoding.js"
import * as Languages from "../src/Languages.js"
import { textImage, wordsOf } from "./support/Images.js"

const english = Either.getOrThrow(Languages.resolve("eng"))

const pool = (settings: Partial<OcrSettings.Settings> = {}) =>
  OcrPool.layer.pipe(Layer.provideMerge(OcrSettings.layer({ threads: 1, ...settings })))

describe("OcrPool", () => {
  it.scoped("reads back every word of text set from SVG", () =>
    Effect.gen(function*() {
      const lines = ["The quick brown fox jumps", "over the lazy dog near", "Harbour Road 14"]
      const bytes = yield* textImage(lines, { width: 900, height: 300, size: 36 })
      const { image } = yield* decode(bytes, 25_000_000)
      const found = yield* (yield* OcrPool.OcrPool).read(image, { language: english })
      const reading = Reading.make({ found, minConfidence: 0.5, language: "eng", width: 900, height: 300 })
      console.log(JSON.stringify(reading).slice(0, 600))
      expect(wordsOf(reading.text)).toEqual(wordsOf(lines.join(" ")))
    }).pipe(Effect.provide(pool())))
})
