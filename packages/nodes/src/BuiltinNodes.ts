/**
 * The built-in node types of `@appexec/nodes` (docs/nodes.md), to pass to `AppexecLayer.make` or
 * `TestHarness.layer` as `nodes`, and the layer of the services they need besides storage.
 */
import type { MediaUrls, NodeType } from "@appexec/core"
import { type Effect, Layer } from "effect"
import { tmpdir } from "node:os"
import { httpJob } from "./HttpJob.js"
import { httpRequest } from "./HttpRequest.js"
import { imageAnimate } from "./ImageAnimate.js"
import { imageCaption } from "./ImageCaption.js"
import { imageBlur, imageConvert, imageGrayscale, imageResize } from "./ImageEdit.js"
import { imageGenerateAlias, imagePlaceholder } from "./ImagePlaceholder.js"
import * as StaleWorkDirs from "./internal/StaleWorkDirs.js"
import { outputImage, outputVideo } from "./MediaOutputs.js"
import * as NodesSettings from "./NodesSettings.js"
import { providerFal } from "./ProviderFal.js"
import { providerOpenAI } from "./ProviderOpenAI.js"
import { providerReplicate } from "./ProviderReplicate.js"
import { videoConvert } from "./VideoConvert.js"
import { videoFromImage } from "./VideoFromImage.js"
import { videoSlideshow } from "./VideoSlideshow.js"
import { videoThumbnail } from "./VideoThumbnail.js"

/** Every built-in node type beyond the core ones, in the order they are documented. */
export const builtinNodes = [
  imagePlaceholder,
  imageGenerateAlias,
  imageResize,
  imageConvert,
  imageGrayscale,
  imageBlur,
  imageCaption,
  imageAnimate,
  videoFromImage,
  videoSlideshow,
  videoThumbnail,
  videoConvert,
  httpRequest,
  httpJob,
  providerReplicate,
  providerFal,
  providerOpenAI,
  outputImage,
  outputVideo
] as const

/** The services the built-in nodes need besides the storage ports and what the instance provides. */
export type Requirements = NodeType.NodeRequirements<(typeof builtinNodes)[number]>

/**
 * The services of the built-in nodes that the host gives: their settings (`settings`, the
 * defaults when absent) and the media URLs. The guarded outbound HTTP client and the blob store
 * come from the instance (`AppexecLayer.make` and its storage).
 */
export const layer = <E = never>(options: {
  readonly settings?: NodesSettings.Overrides
  readonly mediaUrls: Layer.Layer<MediaUrls.MediaUrls, E>
}): Layer.Layer<NodesSettings.NodesSettings | MediaUrls.MediaUrls, E> =>
  Layer.merge(NodesSettings.layer(options.settings), options.mediaUrls)

/**
 * Removes the temporary work directories that killed processes left in `video.tempDir` (the
 * system's when unset): those of a process of this host that is gone, and any older than twice
 * `video.timeoutMs` (docs/nodes.md#child-processes). `serve` and `worker` run it as they start;
 * answers the names removed.
 */
export const sweepStaleWorkDirs = (video: NodesSettings.VideoLimits): Effect.Effect<ReadonlyArray<string>> =>
  StaleWorkDirs.sweepNow(video.tempDir ?? tmpdir(), video.timeoutMs)
