/**
 * @appexec/platform-node: the Node.js adapters of core's ports — the guarded outbound HTTP client
 * (`NodeOutboundHttp`, with its `AddressPolicy`) and the filesystem blob store (`FileBlobStore`).
 */
export * as AddressPolicy from "./AddressPolicy.js"
export * as FileBlobStore from "./FileBlobStore.js"
export * as NodeOutboundHttp from "./NodeOutboundHttp.js"
