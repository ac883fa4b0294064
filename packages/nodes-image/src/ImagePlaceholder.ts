/**
 * `image.placeholder`: a placeholder drawing, a pattern with text. A seed taken from the upstream
 * text and the config picks a two-colour gradient and a pattern of translucent discs; the text is
 * set on top. No model is involved: it stands in for an image until a provider node
 * (`provider.openai`, `provider.replicate`, `provider.fal`) makes a real one. The same text and
 * config always give the same bytes.
 *
 * `image.generate` is its former name, still registered (`imageGenerateAlias`) so that apps
 * imported under it keep importing and running.
 */
import { NodeType } from "@appexec/core"
import { formatBytes } from "@appexec/nodes/Media"
import { Effect, Schema } from "effect"
import { createHash } from "node:crypto"
import { encode, ImageFormat, renderText } from "./Imaging.js"
import { sharpModule } from "./internal/sharpModule.js"

/** Width or height of a generated image, in pixels. */
export const Dimension = Schema.Number.pipe(Schema.int(), Schema.between(16, 4096))

/** The config of `image.placeholder`. */
export const Config = Schema.Struct({
  /** Width in pixels (16–4096, default 512). */
  width: Schema.optionalWith(Dimension, { default: () => 512 }),
  /** Height in pixels (16–4096, default 512). */
  height: Schema.optionalWith(Dimension, { default: () => 512 }),
  /** Encoding (default png). */
  format: Schema.optionalWith(ImageFormat, { default: () => "png" as const }),
  /** Encoder quality 1–100 for jpeg, webp and avif. */
  quality: Schema.optional(Schema.Number.pipe(Schema.int(), Schema.between(1, 100)))
})

const hex = (n: number) => n.toString(16).padStart(2, "0")

/** An RGB colour from hue (0–360), saturation and lightness (0–1). */
const hsl = (h: number, s: number, l: number) => {
  const k = (n: number) => (n + h / 30) % 12
  const a = s * Math.min(l, 1 - l)
  const f = (n: number) => Math.round(255 * (l - a * Math.max(-1, Math.min(k(n) - 3, 9 - k(n), 1))))
  return `#${hex(f(0))}${hex(f(8))}${hex(f(4))}`
}

/** The background drawing of `seed` at the given size, as SVG. */
export const backgroundSvg = (seed: Uint8Array, width: number, height: number): string => {
  const byte = (i: number) => seed[i % seed.length]!
  const hue = (byte(0) * 360) / 256
  const from = hsl(hue, 0.65, 0.42)
  const to = hsl((hue + 40 + (byte(1) % 140)) % 360, 0.7, 0.22)
  const angle = (byte(2) * 2 * Math.PI) / 256
  const [x1, y1, x2, y2] = [
    0.5 - Math.cos(angle) / 2,
    0.5 - Math.sin(angle) / 2,
    0.5 + Math.cos(angle) / 2,
    0.5 + Math.sin(angle) / 2
  ]
  const size = Math.min(width, height)
  const discs = Array.from({ length: 7 }, (_, i) => {
    const cx = (byte(3 + i * 4) / 255) * width
    const cy = (byte(4 + i * 4) / 255) * height
    const r = size * (0.08 + (byte(5 + i * 4) / 255) * 0.32)
    const opacity = 0.06 + (byte(6 + i * 4) / 255) * 0.16
    return `<circle cx="${cx.toFixed(1)}" cy="${cy.toFixed(1)}" r="${r.toFixed(1)}" fill="#ffffff" fill-opacity="${
      opacity.toFixed(3)
    }"/>`
  })
  return [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}">`,
    `<defs><linearGradient id="g" x1="${x1.toFixed(3)}" y1="${y1.toFixed(3)}" x2="${x2.toFixed(3)}" y2="${
      y2.toFixed(3)
    }">`,
    `<stop offset="0" stop-color="${from}"/><stop offset="1" stop-color="${to}"/></linearGradient></defs>`,
    `<rect width="${width}" height="${height}" fill="url(#g)"/>`,
    ...discs,
    `</svg>`
  ].join("")
}

/** The seed of a picture: SHA-256 of the text and the config. */
export const seedOf = (text: string, config: typeof Config.Type): Uint8Array =>
  createHash("sha256")
    .update(JSON.stringify([text, config.width, config.height, config.format, config.quality ?? null]))
    .digest()

/** Font size for `text` on a `width` × `height` picture: large for a word, smaller for a paragraph. */
const fontSize = (text: string, width: number, height: number) =>
  Math.max(10, Math.round(Math.min(width, height) / (4 + Math.sqrt([...text].length))))

/** What both names of the node do: draws the pattern with the upstream text set on it. */
const draw = ({ config, log, node, upstream }: NodeType.NodeContext<typeof Config.Type>) =>
  Effect.gen(function*() {
    const first = upstream[0]
    const text = first === undefined ? "" : NodeType.NodeValue.asText(first.value)
    if (text === undefined) {
      return yield* new NodeType.NodeFailure({
        message: `node '${first!.nodeId}' produced media; ${node.id} needs text`
      })
    }
    const { width, height } = config
    const label = yield* renderText(text, {
      width: width * 0.84,
      maxHeight: height * 0.8,
      size: fontSize(text, width, height)
    })
    const background = sharpModule()(Buffer.from(backgroundSvg(seedOf(text, config), width, height)))
    const picture = label === undefined
      ? background
      : background.composite([
        {
          input: label.png,
          left: Math.floor((width - label.width) / 2),
          top: Math.floor((height - label.height) / 2)
        }
      ])
    const image = yield* encode(picture, config.format, config.quality)
    yield* log(
      `placeholder ${config.format} ${width}×${height}, ${
        image._tag === "Media" ? formatBytes(image.bytes.length) : "?"
      }`
    )
    return image
  })

/** A node type that draws the placeholder, under `type`. */
const placeholderNode = (type: string, description: string) =>
  NodeType.defineNode({ type, description, role: "process", inputs: { min: 0, max: 1 }, config: Config, run: draw })

/** `image.placeholder`: a placeholder drawing (a seeded pattern with the upstream text on it), not a generated image. */
export const imagePlaceholder = placeholderNode(
  "image.placeholder",
  "Draws a placeholder picture (a seeded gradient and pattern with the upstream text set on it); no model is involved."
)

/** `image.generate`: the former name of `image.placeholder`, kept so that apps imported under it still import and run. */
export const imageGenerateAlias = placeholderNode(
  "image.generate",
  "Former name of image.placeholder, kept for apps that use it: draws the same placeholder pattern with text; no model is involved."
)
