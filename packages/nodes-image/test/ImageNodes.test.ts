import { Ids } from "@appexec/api"
import { ExecutionReports } from "@appexec/core"
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { createHash } from "node:crypto"
import * as FakeOrigin from "../../nodes/test/support/FakeOrigin.js"
import { describeImage, testImage } from "../../nodes/test/support/Images.js"
import { download, run } from "../../nodes/test/support/Instance.js"
import { layer } from "./support/ImageInstance.js"

const poster = (config: Record<string, unknown> = {}, type = "image.placeholder") => ({
  name: "Poster",
  description: "Draws a placeholder poster from a prompt",
  nodes: [
    { id: "prompt", type: "input.text", label: "Prompt", config: { name: "prompt", required: true } },
    { id: "render", type, label: "Render", config },
    { id: "poster", type: "output.image", label: "Poster" }
  ],
  edges: [
    { source: "prompt", target: "render" },
    { source: "render", target: "poster" }
  ]
})

/** url input → `nodes` in a chain → image output. */
const chain = (...nodes: ReadonlyArray<{ readonly type: string; readonly config?: Record<string, unknown> }>) => ({
  name: "Chain",
  nodes: [
    { id: "photo", type: "input.url", label: "Photo", config: { name: "photo", required: true, accept: ["image"] } },
    ...nodes.map((n, i) => ({ id: `step${i}`, type: n.type, config: n.config ?? {} })),
    { id: "result", type: "output.image", label: "Result" }
  ],
  edges: ["photo", ...nodes.map((_, i) => `step${i}`), "result"].slice(1).map((target, i, targets) => ({
    source: i === 0 ? "photo" : targets[i - 1]!,
    target
  }))
})

const sha256 = (bytes: Uint8Array) => createHash("sha256").update(bytes).digest("hex")

const imageOf = (definition: unknown, inputs: Record<string, string>) =>
  Effect.gen(function*() {
    const done = yield* run(definition, inputs)
    expect(done.errorMessage).toBeNull()
    expect(done.status).toBe("completed")
    const output = done.outputs[0]!
    expect(output).toMatchObject({ type: "image", status: "completed", error: null })
    const blob = yield* download(output.value!)
    return { ...blob, ...(yield* describeImage(blob.bytes)), url: output.value! }
  })

describe("image.placeholder", () => {
  it.scoped("renders a poster of the asked size and format, served as a signed media URL", () =>
    Effect.gen(function*() {
      const image = yield* imageOf(poster({ width: 512, height: 384, format: "webp" }), { prompt: "a cat in neon" })
      expect(image).toMatchObject({ width: 512, height: 384, format: "webp", contentType: "image/webp" })
      expect(image.url).toMatch(/^http:\/\/appexec\.test\/base\/media\/executions\/.+\.webp\?exp=\d+&sig=[\w-]+$/)
    }).pipe(Effect.provide(layer())))

  it.scoped("is deterministic: the same text and config give the same bytes; other text, other bytes", () =>
    Effect.gen(function*() {
      const a = yield* imageOf(poster({ width: 256, height: 256 }), { prompt: "same words" })
      const b = yield* imageOf(poster({ width: 256, height: 256 }), { prompt: "same words" })
      const c = yield* imageOf(poster({ width: 256, height: 256 }), { prompt: "other words" })
      expect(a.format).toBe("png")
      expect(sha256(a.bytes)).toBe(sha256(b.bytes))
      expect(sha256(a.bytes)).not.toBe(sha256(c.bytes))
    }).pipe(Effect.provide(layer())))

  it.scoped("sets the text on the picture (an empty text leaves the background alone)", () =>
    Effect.gen(function*() {
      const withText = yield* imageOf(poster({ width: 128, height: 128 }), { prompt: "HELLO" })
      const empty = yield* imageOf(
        {
          ...poster({ width: 128, height: 128 }),
          nodes: poster({ width: 128, height: 128 }).nodes.map((n) =>
            n.id === "prompt" ? { ...n, config: { name: "prompt" } } : n
          )
        },
        {}
      )
      expect(sha256(withText.bytes)).not.toBe(sha256(empty.bytes))
    }).pipe(Effect.provide(layer())))

  it.scoped("image.generate, its former name, still imports and draws the same placeholder", () =>
    Effect.gen(function*() {
      const placeholder = yield* imageOf(poster({ width: 200, height: 120 }), { prompt: "old apps" })
      const former = yield* imageOf(poster({ width: 200, height: 120 }, "image.generate"), { prompt: "old apps" })
      expect(former).toMatchObject({ width: 200, height: 120, format: "png" })
      expect(sha256(former.bytes)).toBe(sha256(placeholder.bytes))
    }).pipe(Effect.provide(layer())))

  it.scoped("logs that what it drew is a placeholder, with its format, size and weight", () =>
    Effect.gen(function*() {
      const done = yield* run(poster({ width: 64, height: 48 }), { prompt: "words" })
      const reports = yield* ExecutionReports.ExecutionReports
      const kept = yield* reports.logs(Ids.ExecutionId.make(done.executionId))
      const lines = kept.lines.map(({ report }) => (report._tag === "Log" ? report.message : ""))
      expect(lines.some((line) => /^placeholder png 64×48, \d/.test(line)), lines.join("\n")).toBe(true)
    }).pipe(Effect.provide(layer())))

  it.scoped("refuses a config out of range at import", () =>
    Effect.gen(function*() {
      const error = yield* run(poster({ width: 100_000 }), { prompt: "x" }).pipe(Effect.flip)
      expect(error._tag).toBe("InvalidAppDefinition")
      expect(error.message).toContain("node 'render': config.width")
    }).pipe(Effect.provide(layer())))
})

describe("image editing nodes on a fetched image", () => {
  const withOrigin = <A, E, R>(body: (url: string) => Effect.Effect<A, E, R>) =>
    Effect.gen(function*() {
      const png = yield* testImage(800, 600)
      const origin = yield* FakeOrigin.start({ "/photo.png": { headers: { "content-type": "image/png" }, body: png } })
      return yield* body(origin.url("/photo.png"))
    })

  it.scoped("image.resize then image.convert make a 512×512 WebP thumbnail", () =>
    withOrigin((photo) =>
      Effect.gen(function*() {
        const image = yield* imageOf(
          chain({ type: "image.resize", config: { width: 512, height: 512, fit: "cover" } }, {
            type: "image.convert",
            config: { format: "webp", quality: 80 }
          }),
          { photo }
        )
        expect(image).toMatchObject({ width: 512, height: 512, format: "webp", contentType: "image/webp" })
      })
    ).pipe(Effect.provide(layer())))

  it.scoped("the execution's log says each node's image size and format, in and out", () =>
    withOrigin((photo) =>
      Effect.gen(function*() {
        const done = yield* run(
          chain({ type: "image.resize", config: { width: 512, height: 512, fit: "cover" } }, {
            type: "image.convert",
            config: { format: "webp", quality: 80 }
          }),
          { photo }
        )
        const reports = yield* ExecutionReports.ExecutionReports
        const kept = yield* reports.logs(Ids.ExecutionId.make(done.executionId))
        const lines = kept.lines.map(({ report }) => report._tag === "Log" ? `${report.nodeId}: ${report.message}` : "")
        expect(lines).toHaveLength(4)
        expect(lines[0]).toMatch(/^step0: in: png 800×600, \d/)
        expect(lines[1]).toMatch(/^step0: out: png, \d/)
        expect(lines[2]).toMatch(/^step1: in: png 512×512, \d/)
        expect(lines[3]).toMatch(/^step1: out: webp, \d/)
      })
    ).pipe(Effect.provide(layer())))

  it.scoped("image.resize keeps the input format and the aspect ratio when only the width is given", () =>
    withOrigin((photo) =>
      Effect.gen(function*() {
        const image = yield* imageOf(chain({ type: "image.resize", config: { width: 200 } }), { photo })
        expect(image).toMatchObject({ width: 200, height: 150, format: "png" })
      })
    ).pipe(Effect.provide(layer())))

  it.scoped("image.convert writes jpeg and avif", () =>
    withOrigin((photo) =>
      Effect.gen(function*() {
        const jpeg = yield* imageOf(chain({ type: "image.convert", config: { format: "jpeg", quality: 70 } }), {
          photo
        })
        expect(jpeg).toMatchObject({ width: 800, height: 600, format: "jpeg", contentType: "image/jpeg" })
        const avif = yield* imageOf(chain({ type: "image.convert", config: { format: "avif" } }), { photo })
        expect(avif).toMatchObject({ width: 800, height: 600, format: "avif", contentType: "image/avif" })
      })
    ).pipe(Effect.provide(layer())))

  it.scoped("image.grayscale removes colour and image.blur keeps the size", () =>
    withOrigin((photo) =>
      Effect.gen(function*() {
        const grey = yield* imageOf(chain({ type: "image.grayscale" }), { photo })
        const stats = yield* Effect.promise(() => import("sharp").then((s) => s.default(grey.bytes).stats()))
        expect(stats.isOpaque).toBe(true)
        const [r, g, b] = stats.channels.length >= 3
          ? stats.channels
          : [stats.channels[0]!, stats.channels[0]!, stats.channels[0]!]
        expect(r!.mean).toBeCloseTo(g!.mean, 0)
        expect(g!.mean).toBeCloseTo(b!.mean, 0)
        const blurred = yield* imageOf(chain({ type: "image.blur", config: { sigma: 3 } }), { photo })
        expect(blurred).toMatchObject({ width: 800, height: 600, format: "png" })
      })
    ).pipe(Effect.provide(layer())))

  it.scoped("image.caption sets the text on the image and keeps its size", () =>
    withOrigin((photo) =>
      Effect.gen(function*() {
        const definition = {
          name: "Caption",
          nodes: [
            { id: "photo", type: "input.url", config: { name: "photo", required: true } },
            { id: "text", type: "input.text", config: { name: "text", required: true } },
            { id: "captioned", type: "image.caption", config: { position: "bottom" } },
            { id: "result", type: "output.image" }
          ],
          edges: [
            { source: "text", target: "captioned" },
            { source: "photo", target: "captioned" },
            { source: "captioned", target: "result" }
          ]
        }
        const captioned = yield* imageOf(definition, { photo, text: "Hello from appexec" })
        expect(captioned).toMatchObject({ width: 800, height: 600, format: "png" })
        const plain = yield* imageOf(chain({ type: "image.blur", config: { sigma: 0.3 } }), { photo })
        // The band darkens the bottom of the picture (left of the text) and leaves the top as it was.
        const sharp = (yield* Effect.promise(() => import("sharp"))).default
        const region = (bytes: Uint8Array, top: number) =>
          Effect.promise(async () =>
            sharp(await sharp(bytes).extract({ left: 0, top, width: 100, height: 20 }).png().toBuffer()).stats()
          )
        const bottom = yield* region(captioned.bytes, 575)
        const top = yield* region(captioned.bytes, 0)
        const original = yield* region(plain.bytes, 575)
        expect(bottom.channels[0]!.mean).toBeLessThan(original.channels[0]!.mean - 40)
        expect(top.channels[0]!.mean).toBeCloseTo(original.channels[0]!.mean, -1)
      })
    ).pipe(Effect.provide(layer())))
})
