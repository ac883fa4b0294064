/**
 * The appexec client for plain TypeScript: the same operations as `AppexecClient`, returning
 * Promises. It runs the Effect implementation itself (this is the edge where Effects are run),
 * and rejects with the client's own error classes (`ApiError`, `NetworkError`,
 * `InvalidInputsError`, `AppNameError`, `WaitError`, `WebhookVerificationError`), each an
 * `Error` with a `_tag` to switch on.
 *
 * ```ts
 * const appexec = createClient({ baseUrl: "https://apps.example.com", apiKey: process.env.APPEXEC_API_KEY! })
 * const done = await appexec.run("Poster", { prompt: "a lighthouse" })
 *
 * for await (const event of appexec.stream(executionId)) {
 *   if (event.event === "progress") console.log(event.data.nodeId, event.data.fraction)
 * }
 * ```
 */
import type * as App from "@appexec/api/App"
import type * as Execution from "@appexec/api/Execution"
import type * as Jwk from "@appexec/api/Jwk"
import type * as Live from "@appexec/api/Live"
import type * as Upload from "@appexec/api/Upload"
import type * as WebhookVerifier from "@appexec/core/WebhookVerifier"
import { Cause, Effect, Exit, Option, Stream } from "effect"
import * as AppexecClient from "./AppexecClient.js"
import type { ClientConfig } from "./ClientConfig.js"
import type * as EventStream from "./EventStream.js"
import type * as Polling from "./Polling.js"
import type * as WebhookKeys from "./WebhookKeys.js"
import type * as WebhookRequest from "./WebhookRequest.js"

/** The client's operations, as Promises. */
export interface Client {
  /** The app endpoints (docs/api.md#endpoints). */
  readonly apps: {
    /** The apps of the caller's workspace, then up to `limit` public apps. */
    readonly list: (query?: AppexecClient.ListAppsQuery) => Promise<ReadonlyArray<App.AppSummary>>
    /** One app with its parameters: the source of truth for `inputs`. */
    readonly get: (appId: string) => Promise<App.AppDetail>
    /** The app's workflow graph, for tooling. */
    readonly workflow: (appId: string) => Promise<App.WorkflowGraph>
    /** The app id of `app`, an app id or an app name (exact, else in any case); rejects with `AppNameError` when no single app has it. */
    readonly resolve: (app: string) => Promise<string>
  }
  /** The execution endpoints and waiting. */
  readonly executions: {
    /** Starts an execution (queued; outputs are placeholders). Never re-sent because outputs are not ready. */
    readonly start: (
      appId: string,
      inputs: AppexecClient.Inputs,
      options?: AppexecClient.StartOptions
    ) => Promise<Execution.StartedExecution>
    /** The execution's status and outputs now. */
    readonly get: (executionId: string) => Promise<Execution.Execution>
    /**
     * One page of the workspace's executions, newest first, filtered by `status` and `appId`;
     * pass its `nextCursor` (null on the last page) as `cursor` for the page after it.
     */
    readonly list: (query?: AppexecClient.ListExecutionsQuery) => Promise<Execution.ExecutionPage>
    /**
     * Every execution `query` matches, newest first, across all pages, for `for await`: each page
     * is read when the loop reaches it; leaving the loop early reads no more.
     */
    readonly all: (query?: AppexecClient.ListExecutionsQuery) => AsyncIterable<Execution.Execution>
    /** How the delivery of the execution's webhook goes; null when it has no webhook. */
    readonly webhook: (executionId: string) => Promise<Execution.WebhookDelivery | null>
    /** Cancels the execution; it ends `failed` with "The execution was canceled." */
    readonly cancel: (executionId: string) => Promise<Execution.Execution>
    /**
     * Waits (on the event stream where the server offers it, else long polling, or polling every
     * 3–5 s) until `completed` or `failed`, and returns the execution.
     */
    readonly wait: (executionId: string, options?: Polling.WaitOptions) => Promise<Execution.Execution>
    /** The kept log lines of the execution, oldest first. */
    readonly logs: (executionId: string) => Promise<ReadonlyArray<Live.LogLine>>
  }
  /**
   * The execution's live events, for `for await`: its `execution` snapshot first and at every
   * change, its nodes' `progress` and `log`; resumed with `Last-Event-ID` when the connection
   * drops; done after the terminal `execution` event. Each iteration opens its own connection;
   * leaving the loop early closes it. A failure rejects the iteration with the client's error.
   */
  readonly stream: (executionId: string, options?: EventStream.StreamOptions) => AsyncIterable<EventStream.LiveEvent>
  /**
   * Finds the app by id or name, validates the inputs against its detail, starts, waits; resolves
   * once `completed` or `failed`.
   */
  readonly run: (
    app: string,
    inputs: AppexecClient.Inputs,
    options?: AppexecClient.RunOptions
  ) => Promise<Execution.Execution>
  /**
   * Uploads a file (a `File`, any `Blob`, or bytes) and resolves with its signed URL, which any
   * `url` input takes until `expiresAt`; its type is `contentType`, else the Blob's, else what
   * its bytes show. Rejects with an `ApiError` (`unsupported_media_type`, `payload_too_large`, …).
   */
  readonly upload: (
    file: AppexecClient.UploadBody,
    options?: AppexecClient.UploadOptions
  ) => Promise<Upload.Upload>
  /**
   * Reads a webhook `Request`'s raw body (fetch-style servers), verifies it with the cached key set
   * and returns its execution; rejects with `WebhookVerificationError` (answer 401) or `WebhookPayloadError`.
   */
  readonly verifyWebhookRequest: (
    request: Request,
    options?: WebhookRequest.ReadOptions & WebhookKeys.VerifyOptions
  ) => Promise<WebhookKeys.VerifiedDelivery>
  /** Webhook verification with a cached key set. */
  readonly webhooks: {
    /** The key set, fetched once and cached. */
    readonly keySet: () => Promise<Jwk.JwkSet>
    /**
     * Verifies a webhook's raw body and headers (the service's signature, or Standard Webhooks'
     * with `scheme: "standard"`) and returns its event and execution; rejects with `WebhookVerificationError`.
     */
    readonly verify: (
      rawBody: Uint8Array | string,
      headers: WebhookVerifier.HeadersLike,
      options?: WebhookKeys.VerifyOptions
    ) => Promise<WebhookKeys.VerifiedDelivery>
    /**
     * Sends a finished execution's webhook once more (one attempt, signed when sent, no retries)
     * and returns its delivery, `pending`; rejects with an `ApiError` of code
     * `webhook_not_redeliverable` when it has no webhook, has not finished or is being delivered.
     * With `delivery`, that event's delivery instead.
     */
    readonly redeliver: (
      executionId: string,
      options?: AppexecClient.RedeliverOptions
    ) => Promise<Execution.WebhookDelivery>
  }
  /** The same client as Effects, sharing this one's key-set cache. */
  readonly effect: AppexecClient.AppexecClientService
}

/** Runs `effect`, rejecting with its failure itself rather than a wrapper. */
export const runPromise = <A, E>(effect: Effect.Effect<A, E>): Promise<A> =>
  Effect.runPromiseExit(effect).then((exit) =>
    Exit.isSuccess(exit)
      ? exit.value
      : Promise.reject(Option.getOrElse(Cause.failureOption(exit.cause), () => Cause.squash(exit.cause)))
  )

/** A client for `config`. Creating it sends nothing. */
export const createClient = (config: ClientConfig): Client => {
  const client = Effect.runSync(AppexecClient.make(config))
  return {
    apps: {
      list: (query) => runPromise(client.apps.list(query)),
      get: (appId) => runPromise(client.apps.get(appId)),
      workflow: (appId) => runPromise(client.apps.workflow(appId)),
      resolve: (app) => runPromise(client.apps.resolve(app))
    },
    executions: {
      start: (appId, inputs, options) => runPromise(client.executions.start(appId, inputs, options)),
      get: (executionId) => runPromise(client.executions.get(executionId)),
      list: (query) => runPromise(client.executions.list(query)),
      all: (query) => Stream.toAsyncIterable(client.executions.all(query)),
      webhook: (executionId) => runPromise(client.executions.webhook(executionId)),
      cancel: (executionId) => runPromise(client.executions.cancel(executionId)),
      wait: (executionId, options) => runPromise(client.executions.wait(executionId, options)),
      logs: (executionId) => runPromise(client.executions.logs(executionId))
    },
    stream: (executionId, options) => Stream.toAsyncIterable(client.stream(executionId, options)),
    run: (app, inputs, options) => runPromise(client.run(app, inputs, options)),
    upload: (file, options) => runPromise(client.upload(file, options)),
    verifyWebhookRequest: (request, options) => runPromise(client.verifyWebhookRequest(request, options)),
    webhooks: {
      keySet: () => runPromise(client.webhooks.keySet),
      verify: (rawBody, headers, options) => runPromise(client.webhooks.verify(rawBody, headers, options)),
      redeliver: (executionId, options) => runPromise(client.webhooks.redeliver(executionId, options))
    },
    effect: client
  }
}
