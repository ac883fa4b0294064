/**
 * `image.ocr`: reads the text in an image, offline, with Tesseract on the OCR worker threads
 * (`OcrPool`). Its one value is JSON (`Reading`): the text, and the lines and words with their
 * boxes and confidences; `json.pick` with pointer `/text` gives the text alone to a text output.
 */
import { NodeType } from "@appexec/core"
import { mediaOf, type MediaServices } from "@appexec/nodes/Media"
import { Effect, Either, Schema } from "effect"
import { decode } from "./internal/Decoding.js"
import * as Languages from "./Languages.js"
import { OcrPool } from "./OcrPool.js"
import { OcrSettings } from "./OcrSettings.js"
import * as Reading from "./Reading.js"

/** The config of `image.ocr`. */
export const Config = Schema.Struct({
  /** The language of the text: a Tesseract code whose data package is installed (default `eng`). */
  language: Schema.optionalWith(Languages.Code, { default: () => Languages.ENGLISH }),
  /** Words read with less confidence (0–1) are left out, as the engine's guesses at texture (default 0.45). */
  minConfidence: Schema.optionalWith(Schema.Number.pipe(Schema.between(0, 1)), { default: () => 0.45 })
})

const kib = (bytes: number) => `${+(bytes / 1024).toFixed(1)} KiB`

const percent = (fraction: number) => `${Math.round(fraction * 100)} %`

/** `image.ocr`: one image in, the text read in it out as JSON. */
export const imageOcr = NodeType.defineNode({
  type: "image.ocr",
  description:
    "Reads the text in an image (OCR, offline, on worker threads): JSON of the text, and its lines and words with boxes and confidences.",
  role: "process",
  inputs: { min: 1, max: 1 },
  config: Config,
  run: ({ config, log, progress, upstream }) =>
    Effect.gen(function*() {
      const language = yield* Either.match(Languages.resolve(config.language), {
        onLeft: (message) => Effect.fail(new NodeType.NodeFailure({ message })),
        onRight: Effect.succeed
      })
      const settings = yield* OcrSettings
      // An image produced upstream, this instance's own media, or fetched within the media bounds.
      const { bytes } = yield* mediaOf(upstream[0]!, "image")
      const { format, image } = yield* decode(bytes, settings.maxPixels)
      yield* log(`in: ${format} ${image.width}×${image.height}, ${kib(bytes.length)}`)
      yield* progress(0, "waiting for an OCR thread")
      const pool = yield* OcrPool
      const startedAt = yield* Effect.clockWith((clock) => clock.currentTimeMillis)
      const found = yield* pool.read(image, {
        language,
        onProgress: (fraction) => progress(fraction, "reading the text")
      }).pipe(Effect.mapError((error) => new NodeType.NodeFailure({ message: error.message })))
      const reading = Reading.make({
        found,
        minConfidence: config.minConfidence,
        language: language.code,
        width: image.width,
        height: image.height
      })
      const seconds = ((yield* Effect.clockWith((clock) => clock.currentTimeMillis)) - startedAt) / 1000
      const words = reading.lines.reduce((sum, line) => sum + line.words.length, 0)
      yield* log(
        `read ${words} word(s) in ${reading.lines.length} line(s) in ${seconds.toFixed(1)} s, ` +
          `mean confidence ${percent(reading.confidence)}`
      )
      return NodeType.NodeValue.json(reading)
    })
}) satisfies NodeType.NodeType<OcrPool | OcrSettings | MediaServices>
