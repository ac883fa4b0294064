/**
 * @appexec/nodes: the built-in node types (images on sharp, HTTP provider calls, media outputs),
 * and their settings.
 */
export * as BuiltinNodes from "./BuiltinNodes.js"
export { builtinNodes } from "./BuiltinNodes.js"
export * as HttpJob from "./HttpJob.js"
export * as HttpRequest from "./HttpRequest.js"
export * as ImageAnimate from "./ImageAnimate.js"
export * as ImageCaption from "./ImageCaption.js"
export * as ImageEdit from "./ImageEdit.js"
export * as ImagePlaceholder from "./ImagePlaceholder.js"
export * as MediaOutputs from "./MediaOutputs.js"
export * as NodesSettings from "./NodesSettings.js"
export * as ProviderFal from "./ProviderFal.js"
export * as ProviderOpenAI from "./ProviderOpenAI.js"
export * as ProviderReplicate from "./ProviderReplicate.js"
export * as Subprocess from "./Subprocess.js"
export * as VideoConvert from "./VideoConvert.js"
export * as VideoFromImage from "./VideoFromImage.js"
export * as VideoSlideshow from "./VideoSlideshow.js"
export * as VideoThumbnail from "./VideoThumbnail.js"
