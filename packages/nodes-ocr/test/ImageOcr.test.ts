/**
 * `image.ocr` in an instance, through the example app "Read text" (packages/server/apps): images
 * fetched from a local origin, produced upstream (the Poster's placeholder), refused when too
 * large before any decoding, in a language not installed, or not images; an execution canceled
 * while its image is read ends canceled, and the next reading works.
 */
import { Appexec } from "@appexec/core"
import { OcrPool, Reading } from "@appexec/nodes-ocr"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Fiber, Schema, Stream } from "effect"
import { readFileSync } from "node:fs"
import { hugeHeaderPng, photoImage, textImage, wordsOf } from "./support/Images.js"
import { layer, origin, run, start } from "./support/Instance.js"

const readText: unknown = JSON.parse(
  readFileSync(new URL("../../server/apps/read-text.json", import.meta.url), "utf8")
)

/** "Read text" with `config` for its `image.ocr` node. */
const readTextWith = (config: Record<string, unknown>) => {
  const app = readText as { readonly nodes: ReadonlyArray<{ readonly id: string }> }
  return { ...app, nodes: app.nodes.map((node) => (node.id === "ocr" ? { ...node, config } : node)) }
}

const png = (bytes: Uint8Array) => ({ type: "image/png", bytes })

const decodeReading = Schema.decodeUnknownSync(Schema.parseJson(Reading.Reading))

describe("image.ocr", () => {
  it.scoped("Read text gives back every word of text set from SVG, and its lines with boxes and confidences", () =>
    Effect.gen(function*() {
      const lines = ["Invoice 2041 due on 12 March", "Total 318.40 EUR", "Shipping to Harbour Road"]
      const server = yield* origin({
        "/invoice.png": png(yield* textImage(lines, { width: 1000, height: 320, size: 34 }))
      })
      const done = yield* run(readText, { image: server.url("/invoice.png") })
      expect(done.status, done.errorMessage ?? "").toBe("completed")
      const [text, json] = done.outputs
      expect([text!.label, text!.type, json!.label, json!.type]).toEqual(["Text", "text", "Lines", "json"])
      expect(text!.value).toBe(lines.join("\n"))
      const reading = decodeReading(json!.value)
      expect(reading).toMatchObject({ text: lines.join("\n"), language: "eng", width: 1000, height: 320 })
      expect(reading.lines.map((line) => line.text)).toEqual(lines)
      expect(reading.confidence).toBeGreaterThan(0.8)
      const [first] = reading.lines[0]!.words
      expect(first).toMatchObject({ text: "Invoice", box: { x: expect.any(Number), y: expect.any(Number) } })
      expect(first!.box.x).toBeGreaterThanOrEqual(30)
      expect(first!.box.x).toBeLessThan(40)
    }).pipe(Effect.provide(layer())))

  it.scoped("reads the Poster's prompt back from the placeholder drawn upstream", () =>
    Effect.gen(function*() {
      const roundTrip = {
        name: "Poster read back",
        nodes: [
          { id: "prompt", type: "input.text", config: { name: "prompt", required: true } },
          { id: "title", type: "text.template", config: { template: "{{prompt}} (flat)" } },
          { id: "render", type: "image.placeholder", config: { width: 512, height: 512 } },
          { id: "ocr", type: "image.ocr" },
          { id: "pick", type: "json.pick", config: { pointer: "/text" } },
          { id: "text", type: "output.text" }
        ],
        edges: [
          { source: "prompt", target: "title" },
          { source: "title", target: "render" },
          { source: "render", target: "ocr" },
          { source: "ocr", target: "pick" },
          { source: "pick", target: "text" }
        ]
      }
      for (const prompt of ["a lighthouse at dusk", "Concert tonight at nine"]) {
        const done = yield* run(roundTrip, { prompt })
        expect(wordsOf(done.outputs[0]!.value ?? ""), done.errorMessage ?? "").toEqual(wordsOf(`${prompt} flat`))
      }
    }).pipe(Effect.provide(layer())))

  it.scoped("a photo-like picture without text gives empty text, no lines and no confidence", () =>
    Effect.gen(function*() {
      const server = yield* origin({ "/photo.jpg": { type: "image/jpeg", bytes: yield* photoImage(640, 480) } })
      const done = yield* run(readText, { image: server.url("/photo.jpg") })
      expect(done.status, done.errorMessage ?? "").toBe("completed")
      expect(done.outputs[0]!.value).toBe("")
      expect(decodeReading(done.outputs[1]!.value)).toEqual({
        text: "",
        confidence: 0,
        language: "eng",
        width: 640,
        height: 480,
        lines: []
      })
    }).pipe(Effect.provide(layer())))

  it.scoped("an image over the pixel limit is refused from its header, before decoding, no thread used", () =>
    Effect.gen(function*() {
      const server = yield* origin({
        "/huge.png": png(hugeHeaderPng(100_000, 100_000)),
        "/page.png": png(yield* textImage(["Too many pixels here"], { width: 2000, height: 1000, size: 40 }))
      })
      const huge = yield* run(readText, { image: server.url("/huge.png") })
      expect(huge.errorMessage).toBe(
        "node \"Read text\" ('ocr', image.ocr) failed: the image is too large to read: 100000×100000 is 10000 megapixels; " +
          "text is read in images of up to 1 megapixels"
      )
      const page = yield* run(readText, { image: server.url("/page.png") })
      expect(page.errorMessage).toContain("2000×1000 is 2 megapixels")
      expect((yield* (yield* OcrPool.OcrPool).stats).started).toBe(0)
    }).pipe(Effect.provide(layer({ maxPixels: 1_000_000 }))))

  it.scoped("a language whose data is not installed is refused, saying how to install it; a bad code at import", () =>
    Effect.gen(function*() {
      const server = yield* origin({
        "/a.png": png(yield* textImage(["Bonjour"], { width: 400, height: 120, size: 30 }))
      })
      const done = yield* run(readTextWith({ language: "zzz" }), { image: server.url("/a.png") })
      expect(done.errorMessage).toBe(
        "node \"Read text\" ('ocr', image.ocr) failed: the OCR language 'zzz' is not installed on this instance: " +
          "the operator installs it with npm install @tesseract.js-data/zzz (English, eng, is built in)"
      )
      const refused = yield* Effect.flip((yield* Appexec.Appexec).apps.import(readTextWith({ language: "English" })))
      expect(refused.message).toContain("must be a Tesseract language code such as eng, fra or chi_sim")
    }).pipe(Effect.provide(layer())))

  it.scoped("what is not an image is refused: text, a URL answering HTML, SVG", () =>
    Effect.gen(function*() {
      const server = yield* origin({
        "/page.html": { type: "text/html", bytes: new TextEncoder().encode("<p>hello</p>") },
        "/drawing.svg": { type: "image/svg+xml", bytes: new TextEncoder().encode("<svg/>") }
      })
      const html = yield* run(readText, { image: server.url("/page.html") })
      expect(html.errorMessage).toContain("not an image: the URL answered with content type text/html")
      const svg = yield* run(readText, { image: server.url("/drawing.svg") })
      expect(svg.errorMessage).toContain("SVG documents are refused")
    }).pipe(Effect.provide(layer())))

  it.scoped("an execution canceled while its image is read ends canceled, its thread ended; the next reading works", () =>
    Effect.gen(function*() {
      const dense = Array.from(
        { length: 24 },
        (_, i) => `Row ${i + 1} of a long ledger of harbour goods and their prices`
      )
      const server = yield* origin({
        "/ledger.png": png(yield* textImage(dense, { width: 1400, height: 1200, size: 26 })),
        "/short.png": png(yield* textImage(["Read me after"], { width: 500, height: 120, size: 32 }))
      })
      const appexec = yield* Appexec.Appexec
      const pool = yield* OcrPool.OcrPool
      const { executionId, principal } = yield* start(readText, { image: server.url("/ledger.png") })
      const reading = pool.changes.pipe(Stream.filter((s) => s.reading === 1), Stream.runHead)
      yield* reading
      const waiting = yield* Effect.fork(appexec.executions.await(executionId))
      yield* appexec.executions.cancel(executionId, principal)
      const done = yield* Fiber.join(waiting)
      expect([done.status, done.errorMessage]).toEqual(["failed", "The execution was canceled."])
      yield* pool.changes.pipe(Stream.filter((s) => s.live === 0), Stream.runHead)
      expect(yield* pool.stats).toMatchObject({ started: 1, stopped: 1, reading: 0 })
      const next = yield* run(readText, { image: server.url("/short.png") })
      expect(next.outputs[0]!.value).toBe("Read me after")
      expect(yield* pool.stats).toMatchObject({ started: 2, stopped: 1 })
    }).pipe(Effect.provide(layer())))
})
