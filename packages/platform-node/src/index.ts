/**
 * @appexec/platform-node: the Node.js adapters of core's ports — the guarded outbound HTTP client
 * (`NodeOutboundHttp`, with its `AddressPolicy`), the filesystem blob store (`FileBlobStore`), the
 * worker-thread webhook signer (`NodeWebhookSigner`) — and of `@appexec/http`'s app: the
 * `(req, res)` listener and the connection-guarding server (`NodeListener`), and the gate that
 * holds requests until the app is built (`StartGate`).
 */
export * as AddressPolicy from "./AddressPolicy.js"
export * as FileBlobStore from "./FileBlobStore.js"
export * as NodeListener from "./NodeListener.js"
export * as NodeOutboundHttp from "./NodeOutboundHttp.js"
export * as NodeProcessMetrics from "./NodeProcessMetrics.js"
export * as NodeWebhookSigner from "./NodeWebhookSigner.js"
export * as StartGate from "./StartGate.js"
