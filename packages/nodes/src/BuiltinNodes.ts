/**
 * The node types of `@appexec/nodes` (docs/nodes.md): HTTP calls, model providers and the media
 * outputs, to pass to `AppexecLayer.make` or `TestHarness.layer` as `nodes`, and the layer of the
 * services they need besides storage. Neither sharp nor ffmpeg comes with them: the image nodes
 * are `@appexec/nodes-image`'s, the video nodes `@appexec/nodes-video`'s, each with its own list
 * (`imageNodes`, `videoNodes`), served by this same layer.
 */
import type { MediaUrls, NodeType } from "@appexec/core"
import { Layer } from "effect"
import { httpJob } from "./http/HttpJob.js"
import { httpRequest } from "./http/HttpRequest.js"
import * as NodesSettings from "./NodesSettings.js"
import { outputImage, outputVideo } from "./outputs/MediaOutputs.js"
import { providerFal } from "./providers/ProviderFal.js"
import { providerOpenAI } from "./providers/ProviderOpenAI.js"
import { providerReplicate } from "./providers/ProviderReplicate.js"

/**
 * The node types of this package, by family in the order they are documented: HTTP
 * (`http/`), providers (`providers/`), media outputs (`outputs/`). A node of one of these
 * families is one module (or folder) in the family's folder and one entry here.
 */
export const builtinNodes = [
  httpRequest,
  httpJob,
  providerReplicate,
  providerFal,
  providerOpenAI,
  outputImage,
  outputVideo
] as const

/** The services the node types of this package need besides the storage ports and what the instance provides. */
export type Requirements = NodeType.NodeRequirements<(typeof builtinNodes)[number]>

/**
 * The services of the built-in nodes that the host gives: their settings (`settings`, the
 * defaults when absent) and the media URLs. The guarded outbound HTTP client and the blob store
 * come from the instance (`AppexecLayer.make` and its storage). One layer serves the nodes of
 * `@appexec/nodes`, `@appexec/nodes-image` and `@appexec/nodes-video` alike: they read the one
 * `NodesSettings`.
 */
export const layer = <E = never>(options: {
  readonly settings?: NodesSettings.Overrides
  readonly mediaUrls: Layer.Layer<MediaUrls.MediaUrls, E>
}): Layer.Layer<NodesSettings.NodesSettings | MediaUrls.MediaUrls, E> =>
  Layer.merge(NodesSettings.layer(options.settings), options.mediaUrls)
