/**
 * The appexec client for Effect programs: the six endpoints of docs/api.md#endpoints and the
 * extensions (cancel, the execution list, the webhook delivery and its redelivery, uploads) as typed methods
 * (`HttpApiClient` over the API definition of `@appexec/api`, so request and response schemas
 * are the server's own), the live events of an execution (`stream`, docs/api.md#live-executions)
 * and its logs, waiting (on the event stream where the server offers it, else by polling), `run`
 * (find the app by id or name, validate, start, wait), and webhook verification with a cached key
 * set, from raw bytes or a web `Request`. Retries follow docs/api.md#errors (see `RetryPolicy`).
 * The Promise client (`PromiseClient`) runs this same implementation.
 */
import type * as App from "@appexec/api/App"
import type * as Execution from "@appexec/api/Execution"
import type * as Jwk from "@appexec/api/Jwk"
import type * as Live from "@appexec/api/Live"
import type * as Upload from "@appexec/api/Upload"
import type * as WebhookVerifier from "@appexec/core/WebhookVerifier"
import { Context, type Effect, Layer, type Stream } from "effect"
import type { ClientConfig } from "./ClientConfig.js"
import type { AppNameError, InvalidInputsError, RequestError, WaitError, WebhookPayloadError } from "./ClientError.js"
import type * as EventStream from "./EventStream.js"
import * as internal from "./internal/client.js"
import type * as Polling from "./Polling.js"
import type * as WebhookKeys from "./WebhookKeys.js"
import type * as WebhookRequest from "./WebhookRequest.js"

/** Input values keyed by parameter name, exactly as the app detail names them (docs/api.md#start-an-execution). */
export type Inputs = Readonly<Record<string, string>>

/** Query of the app list (docs/api.md#list-apps). */
export interface ListAppsQuery {
  /** Filters by name or description, case-insensitive. */
  readonly search?: string
  /** Most public apps returned (1–100, default 10); the workspace's own apps always come. */
  readonly limit?: number
}

/** Query of the execution list (docs/api.md#list-executions). */
export interface ListExecutionsQuery {
  /** Only the executions in this status. */
  readonly status?: Execution.ExecutionStatus
  /** Only the executions of this app (its id). */
  readonly appId?: string
  /** Executions per page, 1–100 (default 20). */
  readonly limit?: number
  /** The `nextCursor` of the page before: the page after it. */
  readonly cursor?: string
}

/** Options of a start. */
export interface StartOptions {
  /** An http(s) URL that receives the signed result on completion (docs/api.md#start-an-execution). */
  readonly webhook?: string
  /**
   * The events `webhook` receives (docs/webhooks.md#events): `start`, `output`, `logs`,
   * `completed`; the completion alone when absent. Needs `webhook`.
   */
  readonly webhookEvents?: ReadonlyArray<Execution.WebhookEvent>
  /**
   * Sent as `Idempotency-Key` (docs/api.md#idempotent-starts): a start sent again with the same
   * key answers the first execution instead of starting another, so it is safe to retry.
   */
  readonly idempotencyKey?: string
  /**
   * How soon the execution is taken (docs/scaling.md#priorities): an integer from -10 to 10,
   * default 0; each step goes before executions up to a minute older. A workspace may be held to
   * a lower highest priority (a start above it is refused, 400 `invalid_request`).
   */
  readonly priority?: number
}

/** Options of a redelivery. */
export interface RedeliverOptions {
  /** The `id` of one of the execution's `deliveries` (docs/webhooks.md#events); the completion webhook when absent. */
  readonly delivery?: string
}

/** Options of `run`: those of the start and of the wait. */
export interface RunOptions extends StartOptions, Polling.WaitOptions {
  /** Check the inputs against the app detail before sending (default true). */
  readonly validate?: boolean
  /**
   * Called once the execution is started (queued), before the wait: its id is known from then on,
   * to follow it again should this process stop waiting. May return an Effect, which `run` runs
   * before it waits.
   */
  readonly onStarted?: (started: Execution.StartedExecution) => void | Effect.Effect<void>
}

/** Options of an upload. */
export interface UploadOptions {
  /**
   * The file's media type (`image/png`, …). Default: the `type` of a `Blob`/`File` when it has
   * one, else the type its bytes show (`MediaType.sniff` of core); the server checks it against
   * the bytes either way.
   */
  readonly contentType?: string
}

/** What `upload` takes: a `File`, any `Blob`, or the bytes themselves. */
export type UploadBody = Blob | Uint8Array

/** The client's operations, as Effects. */
export interface AppexecClientService {
  /** The app endpoints (docs/api.md#endpoints). */
  readonly apps: {
    /** The apps of the caller's workspace, then up to `limit` public apps. */
    readonly list: (query?: ListAppsQuery) => Effect.Effect<ReadonlyArray<App.AppSummary>, RequestError>
    /** One app with its parameters: the source of truth for `inputs`. */
    readonly get: (appId: string) => Effect.Effect<App.AppDetail, RequestError>
    /** The app's workflow graph, for tooling. */
    readonly workflow: (appId: string) => Effect.Effect<App.WorkflowGraph, RequestError>
    /**
     * The app id of `app`: itself when it is an app id (a UUID), else the one app named exactly
     * `app` — or, when none is, named `app` in any case (`GET /v1/apps?search=`). No such app, or
     * several, fail with `AppNameError`.
     */
    readonly resolve: (app: string) => Effect.Effect<string, RequestError | AppNameError>
  }
  /** The execution endpoints (docs/api.md#endpoints) and waiting. */
  readonly executions: {
    /**
     * Starts an execution: queued, outputs are placeholders. Sent once; sent again only after a
     * 429 or when it provably never reached the server.
     */
    readonly start: (
      appId: string,
      inputs: Inputs,
      options?: StartOptions
    ) => Effect.Effect<Execution.StartedExecution, RequestError>
    /** The execution's status and outputs now. */
    readonly get: (executionId: string) => Effect.Effect<Execution.Execution, RequestError>
    /**
     * One page of the workspace's executions, newest first (docs/api.md#list-executions):
     * filtered by `status` and `appId`; `nextCursor` (null on the last page) as `cursor` reads
     * the page after it.
     */
    readonly list: (query?: ListExecutionsQuery) => Effect.Effect<Execution.ExecutionPage, RequestError>
    /**
     * Every execution `query` matches, newest first, across all pages: each page is read when the
     * stream reaches it, from `query.cursor` when given.
     */
    readonly all: (query?: ListExecutionsQuery) => Stream.Stream<Execution.Execution, RequestError>
    /**
     * How the delivery of the execution's webhook goes: `pending`, `delivered` or `failed`, with
     * every attempt and its error; null when it has no webhook (docs/webhooks.md#failed-deliveries).
     */
    readonly webhook: (executionId: string) => Effect.Effect<Execution.WebhookDelivery | null, RequestError>
    /**
     * Cancels the execution (docs/api.md#cancel-an-execution) and returns it as it is then; it
     * ends `failed` with "The execution was canceled." A finished one fails with an `ApiError`
     * of code `execution_finished`.
     */
    readonly cancel: (executionId: string) => Effect.Effect<Execution.Execution, RequestError>
    /**
     * Waits until the execution is `completed` or `failed` and returns it (either way): on its
     * event stream where the server offers it (`onStatus` sees every change as it comes,
     * `onEvent` every event), else long polling where the server supports it (each read held
     * until the execution changes), else polling every 3–5 s. The result is the same either way.
     */
    readonly wait: (
      executionId: string,
      options?: Polling.WaitOptions
    ) => Effect.Effect<Execution.Execution, RequestError | WaitError>
    /**
     * The kept log lines of the execution, oldest first (docs/api.md#live-executions); a server
     * without live executions answers 404.
     */
    readonly logs: (executionId: string) => Effect.Effect<ReadonlyArray<Live.LogLine>, RequestError>
  }
  /**
   * The execution's live events (docs/api.md#live-executions): its `execution` snapshot first and
   * at every change, its nodes' `progress` and `log` as they report; resumed with `Last-Event-ID`
   * when the connection drops; ends after the terminal `execution` event. A server without the
   * stream fails it with a 404 `ApiError` (`EventStream.isRouteMissing`).
   */
  readonly stream: (
    executionId: string,
    options?: EventStream.StreamOptions
  ) => Stream.Stream<EventStream.LiveEvent, RequestError>
  /**
   * Finds the app (`app` is its id or its name, as `apps.resolve` reads it), reads its detail,
   * checks `inputs` against it, starts an execution and waits for it; returns the execution once
   * `completed` or `failed`. Wrong inputs fail with `InvalidInputsError`, found before sending, or
   * after a 400 `invalid_inputs` from a fresh read of the app detail.
   */
  readonly run: (
    app: string,
    inputs: Inputs,
    options?: RunOptions
  ) => Effect.Effect<Execution.Execution, RequestError | WaitError | InvalidInputsError | AppNameError>
  /**
   * Reads the raw body of a webhook `Request` (fetch-style servers: Hono, Next.js route handlers,
   * Deno, workers), verifies its signature and timestamp with the cached key set, and decodes its
   * execution. Answer 401 to a `WebhookVerificationError` and ignore the body.
   */
  readonly verifyWebhookRequest: (
    request: Request,
    options?: WebhookRequest.ReadOptions & WebhookKeys.VerifyOptions
  ) => Effect.Effect<
    WebhookKeys.VerifiedDelivery,
    WebhookVerifier.WebhookVerificationError | WebhookPayloadError | RequestError
  >
  /**
   * Uploads a file (docs/api.md#uploads) and answers its signed URL, which any `url` input takes
   * as its value until `expiresAt`. Fails with an `ApiError` of code `unsupported_media_type`
   * (415) when the bytes are not of the type, `payload_too_large` (413) past the server's bound.
   * Sent once, like a start.
   */
  readonly upload: (file: UploadBody, options?: UploadOptions) => Effect.Effect<Upload.Upload, RequestError>
  /** Webhook verification (docs/api.md#get-the-webhook-signing-key, §6.3). */
  readonly webhooks: {
    /** The key set, fetched once and cached. */
    readonly keySet: Effect.Effect<Jwk.JwkSet, RequestError>
    /**
     * Verifies a webhook's raw body and headers (the service's signature, or Standard Webhooks'
     * with `scheme: "standard"`) and decodes its body; refetches the keys once on an unknown key.
     */
    readonly verify: (
      rawBody: Uint8Array | string,
      headers: WebhookVerifier.HeadersLike,
      options?: WebhookKeys.VerifyOptions
    ) => Effect.Effect<
      WebhookKeys.VerifiedDelivery,
      WebhookVerifier.WebhookVerificationError | WebhookPayloadError | RequestError
    >
    /**
     * Sends the webhook of a finished execution once more (docs/api.md#redeliver-a-webhook): one
     * attempt, signed when the server sends it, no retries after it; returns the delivery, then
     * `pending`, with its earlier attempts (`executions.webhook` shows how it went). Fails with an
     * `ApiError` of code `webhook_not_redeliverable` when the execution has no webhook, has not
     * finished, or its delivery is under way. With `delivery` (an `id` of `executions.webhook`'s
     * `deliveries`), that event instead. Sent once, like a start.
     */
    readonly redeliver: (
      executionId: string,
      options?: RedeliverOptions
    ) => Effect.Effect<Execution.WebhookDelivery, RequestError>
  }
}

/** The client as a service, for programs that provide it with `layer`. */
export class AppexecClient
  extends Context.Tag("@appexec/client/AppexecClient")<AppexecClient, AppexecClientService>()
{}
/** Builds a client from `config`. */
export const make: (config: ClientConfig) => Effect.Effect<AppexecClientService> = internal.make

/** The client as a layer. */
export const layer = (config: ClientConfig): Layer.Layer<AppexecClient> => Layer.effect(AppexecClient, make(config))
