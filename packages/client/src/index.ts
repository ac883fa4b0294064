/**
 * @appexec/client: the typed client for appexec API consumers. Discover apps, read their
 * parameters, start executions, follow them live, wait for them, read their outputs, and verify webhooks, with
 * the retries of docs/api.md#errors. `PromiseClient` for plain JavaScript and TypeScript, `AppexecClient`
 * for Effect. It runs wherever `fetch` runs (Node, browsers, Deno, workers) and loads no Node
 * API; webhook verification for a Node `IncomingMessage` lives in `@appexec/client/node`.
 */
export * as AppexecClient from "./AppexecClient.js"
export * as ClientConfig from "./ClientConfig.js"
export * as ClientError from "./ClientError.js"
export * as EventStream from "./EventStream.js"
export * as Outputs from "./Outputs.js"
export * as Polling from "./Polling.js"
export * as PromiseClient from "./PromiseClient.js"
export { createClient } from "./PromiseClient.js"
export * as RetryPolicy from "./RetryPolicy.js"
export * as WebhookKeys from "./WebhookKeys.js"
export { verifyStandardWebhook, verifyWebhook } from "./WebhookKeys.js"
export * as WebhookRequest from "./WebhookRequest.js"
/**
 * Core's webhook verification of both signatures (docs/webhooks.md: the service's headers and
 * Standard Webhooks' `v1a`), for receivers that hold the keys themselves: runtime-neutral.
 */
export * as WebhookVerifier from "@appexec/core/WebhookVerifier"
