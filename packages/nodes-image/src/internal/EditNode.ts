/**
 * The header the image-editing nodes share, written once: a process node of one input that takes
 * the upstream image (produced, or fetched from a URL), applies a sharp transformation, and
 * encodes the result in the input's format unless the node chooses another.
 */
import { NodeType } from "@appexec/core"
import { formatBytes, mediaOf, type MediaServices } from "@appexec/nodes/Media"
import { NodesSettings } from "@appexec/nodes/NodesSettings"
import { Effect, type Schema } from "effect"
import type { Sharp } from "sharp"
import { encode, formatFromMetadata, type ImageFormat, metadataOf, open } from "../Imaging.js"

/** How an editing node changes an image. */
export interface Edit {
  /** The transformation; it may use the decoded size. */
  readonly apply: (
    pipeline: Sharp,
    size: { readonly width: number; readonly height: number }
  ) => Effect.Effect<Sharp, NodeType.NodeFailure>
  /** The output format; the input's (or png for formats the nodes do not write) when absent. */
  readonly format?: ImageFormat
  /** Encoder quality, 1–100. */
  readonly quality?: number | undefined
}

/** Edits the image of `upstream` as `edit` says; the sizes and formats in and out go to the execution's log. */
export const editImage = (
  upstream: NodeType.UpstreamValue,
  edit: Edit,
  log: NodeType.RunContext["log"]
): Effect.Effect<NodeType.NodeValue, NodeType.NodeFailure, MediaServices> =>
  Effect.gen(function*() {
    const { media } = yield* NodesSettings
    const image = yield* mediaOf(upstream, "image")
    const meta = yield* metadataOf(image.bytes, media.maxPixels)
    const pipeline = open(image.bytes, media.maxPixels).rotate()
    // EXIF orientations 5–8 swap width and height once rotated.
    const swapped = (meta.orientation ?? 1) >= 5
    const size = { width: swapped ? meta.height! : meta.width!, height: swapped ? meta.width! : meta.height! }
    yield* log(`in: ${meta.format ?? "image"} ${size.width}×${size.height}, ${formatBytes(image.bytes.length)}`)
    const edited = yield* edit.apply(pipeline, size)
    const format = edit.format ?? formatFromMetadata(meta) ?? "png"
    const out = yield* encode(edited, format, edit.quality, image.bytes)
    yield* log(`out: ${format}, ${out._tag === "Media" ? formatBytes(out.bytes.length) : "?"}`)
    return out
  })

/** An image-editing node: its type, its config, and the edit a config makes. */
export interface EditNodeSpec<C, CI> {
  /** Unique type name, such as `image.resize`. */
  readonly type: string
  /** One sentence for operators' docs. */
  readonly description: string
  readonly config: Schema.Schema<C, CI>
  /** Further import-time checks of the config; each string is one problem. */
  readonly check?: (config: C) => ReadonlyArray<string>
  /** The edit of a node with this config. */
  readonly edit: (config: C) => Edit
}

/** Defines an image-editing node (`NodeType.defineNode` with the header above). */
export const define = <C, CI>(spec: EditNodeSpec<C, CI>) =>
  NodeType.defineNode({
    type: spec.type,
    description: spec.description,
    role: "process",
    inputs: { min: 1, max: 1 },
    config: spec.config,
    ...(spec.check === undefined ? {} : { check: spec.check }),
    run: ({ config, log, upstream }) => editImage(upstream[0]!, spec.edit(config), log)
  })
