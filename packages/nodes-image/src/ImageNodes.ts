/**
 * The image node types of `@appexec/nodes-image` (docs/nodes.md#images), on sharp, to pass to
 * `AppexecLayer.make` or `TestHarness.layer` as `nodes` beside the lists of `@appexec/nodes`
 * (`builtinNodes`) and `@appexec/nodes-video`. Their services are the same as those nodes':
 * `BuiltinNodes.layer` of `@appexec/nodes` gives them.
 */
import type { NodeType } from "@appexec/core"
import { imageAnimate } from "./ImageAnimate.js"
import { imageCaption } from "./ImageCaption.js"
import { imageBlur, imageConvert, imageGrayscale, imageResize } from "./ImageEdit.js"
import { imageGenerateAlias, imagePlaceholder } from "./ImagePlaceholder.js"

/**
 * The image node types, in the order they are documented. A new image node is one module (or a
 * folder, for a node of several parts) in `src/` and one entry here.
 */
export const imageNodes = [
  imagePlaceholder,
  imageGenerateAlias,
  imageResize,
  imageConvert,
  imageGrayscale,
  imageBlur,
  imageCaption,
  imageAnimate
] as const

/** The services the image nodes need besides the storage ports and what the instance provides. */
export type Requirements = NodeType.NodeRequirements<(typeof imageNodes)[number]>
