/**
 * @appexec/client: the typed client for appexec API consumers. Discover apps, read their
 * parameters, start executions, wait for them, read their outputs, and verify webhooks, with
 * the retries of SPEC §7. `PromiseClient` for plain TypeScript, `AppexecClient` for Effect.
 */
export * as AppexecClient from "./AppexecClient.js"
export * as ClientConfig from "./ClientConfig.js"
export * as ClientError from "./ClientError.js"
export * as NodeWebhook from "./NodeWebhook.js"
export * as Outputs from "./Outputs.js"
export * as Polling from "./Polling.js"
export * as PromiseClient from "./PromiseClient.js"
export * as RetryPolicy from "./RetryPolicy.js"
export * as WebhookKeys from "./WebhookKeys.js"
export { createClient } from "./PromiseClient.js"
export { verifyWebhook } from "./WebhookKeys.js"
/** Core's webhook verification (SPEC §6.3), for receivers that hold the key set themselves. */
export { WebhookVerifier } from "@appexec/core"
