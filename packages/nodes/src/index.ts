/**
 * @appexec/nodes: the built-in node types that need neither sharp nor ffmpeg (HTTP calls, model
 * providers, media outputs), their settings, and what the image and video packages and a host's
 * own node types build on (`Media`, `Subprocess`).
 */
export * as BuiltinNodes from "./BuiltinNodes.js"
export { builtinNodes } from "./BuiltinNodes.js"
export * as HttpJob from "./http/HttpJob.js"
export * as HttpRequest from "./http/HttpRequest.js"
export * as Media from "./Media.js"
export * as NodesSettings from "./NodesSettings.js"
export * as MediaOutputs from "./outputs/MediaOutputs.js"
export * as ProviderFal from "./providers/ProviderFal.js"
export * as ProviderOpenAI from "./providers/ProviderOpenAI.js"
export * as ProviderReplicate from "./providers/ProviderReplicate.js"
export * as Subprocess from "./Subprocess.js"
