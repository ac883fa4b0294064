/**
 * `image.animate` on sharp: frames of different sizes become an animated WebP or GIF, decoded for
 * real (pages, delays, loop, each page's colour), within `media.maxPixels` in all.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import sharp from "sharp"
import { failureOf, oneNode, resultOf, serving } from "../../nodes/test/support/OneNode.js"
import { layer } from "./support/ImageInstance.js"

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
      Effect.gen(function*() {
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
      }).pipe(Effect.provide(layer())))
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
