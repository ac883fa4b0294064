/**
 * How a client is set up: where the service is, the API key, the `fetch` it sends with, how long
 * a request may take, how retries are bounded, and how webhooks are verified.
 */
import type { RetryOptions, RetryReason } from "./RetryPolicy.js"
import type * as WebhookKeys from "./WebhookKeys.js"

/** What an `onRetry` hook is told before the client waits and sends a request again. */
export interface RetryEvent {
  readonly method: string
  readonly url: string
  /** Why: a 429, a transient server error, or a network failure. */
  readonly reason: RetryReason
  /** The retry about to be made, 1 for the first. */
  readonly retry: number
  /** How long the client waits before sending again. */
  readonly delayMs: number
}

/** Settings of a client. Only `baseUrl` and `apiKey` are required. */
export interface ClientConfig {
  /** Where the service answers, without `/v1`: `https://apps.example.com` or `http://127.0.0.1:8080/api`. */
  readonly baseUrl: string | URL
  /** A workspace API key, sent as `x-api-key` (docs/api.md#authentication). */
  readonly apiKey: string
  /** The `fetch` to send requests with (default: the global one). Wrap it to log, trace or test. */
  readonly fetch?: typeof globalThis.fetch
  /** Time one attempt may take until the response headers arrive, in milliseconds (default 30 000). */
  readonly timeoutMs?: number
  /** Bounds of the retries docs/api.md#errors allows. */
  readonly retry?: RetryOptions
  /** Called before every retry, for logs or a status line. */
  readonly onRetry?: (event: RetryEvent) => void
  /** Brand word of the webhook header names (default `Service`: `X-Service-Webhook-Signature`). */
  readonly webhookBrand?: string
  /** Largest accepted age (or lead) of a webhook timestamp, in seconds (default 300, docs/api.md#signature). */
  readonly webhookToleranceSeconds?: number
  /**
   * The signature webhook verification checks (default `service`: `X-Service-Webhook-Signature`;
   * `standard`: Standard Webhooks' `webhook-signature: v1a,…`, docs/webhooks.md#standard-webhooks).
   */
  readonly webhookScheme?: WebhookKeys.Scheme
}

/** The request timeout used when `timeoutMs` is not given. */
export const DEFAULT_TIMEOUT_MS = 30_000

/** The base URL as a string without a trailing slash, so that `/v1/...` can follow it. */
export const normalizeBaseUrl = (baseUrl: string | URL): string => baseUrl.toString().replace(/\/+$/, "")
