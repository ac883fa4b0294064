/**
 * The appexec client for plain TypeScript: the same operations as `AppexecClient`, returning
 * Promises. It runs the Effect implementation itself (this is the edge where Effects are run),
 * and rejects with the client's own error classes (`ApiError`, `NetworkError`,
 * `InvalidInputsError`, `WaitError`, `WebhookVerificationError`), each an `Error` with a
 * `_tag` to switch on.
 *
 * ```ts
 * const appexec = createClient({ baseUrl: "https://apps.example.com", apiKey: process.env.APPEXEC_API_KEY! })
 * const done = await appexec.run(appId, { prompt: "a lighthouse" })
 * ```
 */
import type { App, Execution, Jwk } from "@appexec/api"
import type { WebhookVerifier } from "@appexec/core"
import { Cause, Effect, Exit, Option } from "effect"
import * as AppexecClient from "./AppexecClient.js"
import type { ClientConfig } from "./ClientConfig.js"
import type * as Polling from "./Polling.js"
import type * as WebhookKeys from "./WebhookKeys.js"

/** The client's operations, as Promises. */
export interface Client {
  /** The app endpoints (SPEC §4.1–§4.3). */
  readonly apps: {
    /** The apps of the caller's workspace, then up to `limit` public apps. */
    readonly list: (query?: AppexecClient.ListAppsQuery) => Promise<ReadonlyArray<App.AppSummary>>
    /** One app with its parameters: the source of truth for `inputs`. */
    readonly get: (appId: string) => Promise<App.AppDetail>
    /** The app's workflow graph, for tooling. */
    readonly workflow: (appId: string) => Promise<App.WorkflowGraph>
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
    /** Polls (every 3–5 s by default) until `completed` or `failed`, and returns the execution. */
    readonly wait: (executionId: string, options?: Polling.WaitOptions) => Promise<Execution.Execution>
  }
  /** Validates the inputs against the app detail, starts, waits; resolves once `completed` or `failed`. */
  readonly run: (appId: string, inputs: AppexecClient.Inputs, options?: AppexecClient.RunOptions) => Promise<Execution.Execution>
  /** Webhook verification with a cached key set. */
  readonly webhooks: {
    /** The key set, fetched once and cached. */
    readonly keySet: () => Promise<Jwk.JwkSet>
    /** Verifies a webhook's raw body and headers and returns its execution; rejects with `WebhookVerificationError`. */
    readonly verify: (rawBody: Uint8Array | string, headers: WebhookVerifier.HeadersLike) => Promise<WebhookKeys.VerifiedDelivery>
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
      workflow: (appId) => runPromise(client.apps.workflow(appId))
    },
    executions: {
      start: (appId, inputs, options) => runPromise(client.executions.start(appId, inputs, options)),
      get: (executionId) => runPromise(client.executions.get(executionId)),
      wait: (executionId, options) => runPromise(client.executions.wait(executionId, options))
    },
    run: (appId, inputs, options) => runPromise(client.run(appId, inputs, options)),
    webhooks: {
      keySet: () => runPromise(client.webhooks.keySet),
      verify: (rawBody, headers) => runPromise(client.webhooks.verify(rawBody, headers))
    },
    effect: client
  }
}
