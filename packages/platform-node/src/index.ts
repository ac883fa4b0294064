/**
 * @appexec/platform-node: the Node.js adapters of core's ports — the guarded outbound HTTP client
 * (`NodeOutboundHttp`, with its `AddressPolicy`), the filesystem blob store (`FileBlobStore`) and
 * the worker-thread webhook signer (`NodeWebhookSigner`).
 */
export * as AddressPolicy from "./AddressPolicy.js"
export * as FileBlobStore from "./FileBlobStore.js"
export * as NodeOutboundHttp from "./NodeOutboundHttp.js"
export * as NodeWebhookSigner from "./NodeWebhookSigner.js"
