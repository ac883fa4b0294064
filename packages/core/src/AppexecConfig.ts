/**
 * Settings of an appexec instance, with the defaults of DESIGN §3.
 */
import { Context, Layer } from "effect"
import type { PrivateJwk } from "./SigningKeyJwk.js"

/** The settings of an appexec instance. Durations are milliseconds. */
export interface AppexecOptions {
  /** Prefix of every API key (SPEC §5). */
  readonly keyPrefix: string
  /** How long a claim on an execution lasts without renewal. */
  readonly leaseMs: number
  /** How often a running worker renews its lease. */
  readonly renewEveryMs: number
  /** How many claims an execution may use up (lost workers included) before it is failed. */
  readonly maxAttempts: number
  /** Execution timeout for apps that set none. */
  readonly defaultTimeoutMs: number
  /** Nodes of one execution that run at the same time. */
  readonly nodeConcurrency: number
  /** Executions one worker runs at the same time. */
  readonly workerConcurrency: number
  /** How often an idle worker looks for work written by other processes. */
  readonly pollIntervalMs: number
  /** How long a stopping worker waits for running executions before it releases them. */
  readonly drainTimeoutMs: number
  /** Brand word of the webhook headers: `X-<brand>-Webhook-Signature` (DESIGN §3). */
  readonly webhookBrand: string
  /** Waits before each webhook retry after the first attempt; their count is the number of retries. */
  readonly webhookRetryDelaysMs: ReadonlyArray<number>
  /** Time a receiver has to answer a webhook with a 2xx. */
  readonly webhookTimeoutMs: number
  /** How often the webhook dispatcher looks for due deliveries when nothing woke it. */
  readonly webhookPollIntervalMs: number
  /** Webhook deliveries one dispatcher sends at the same time. */
  readonly webhookConcurrency: number
  /**
   * How long a dispatcher's claim on a delivery outlasts the request's time limit. An attempt cut
   * short by a crash is sent again once `webhookTimeoutMs + webhookClaimMarginMs` has passed.
   */
  readonly webhookClaimMarginMs: number
  /** How long a rotated-out signing key stays in the published key set. */
  readonly signingKeyGraceMs: number
  /** A signing key given by the operator (private JWK); when absent one is generated and stored. */
  readonly signingKeyJwk?: PrivateJwk | undefined
}

/** The defaults of DESIGN §3. */
export const defaults: AppexecOptions = {
  keyPrefix: "aex_",
  leaseMs: 30_000,
  renewEveryMs: 10_000,
  maxAttempts: 3,
  defaultTimeoutMs: 10 * 60_000,
  nodeConcurrency: 4,
  workerConcurrency: 4,
  pollIntervalMs: 250,
  drainTimeoutMs: 10_000,
  webhookBrand: "Service",
  webhookRetryDelaysMs: [5_000, 30_000, 120_000],
  webhookTimeoutMs: 10_000,
  webhookPollIntervalMs: 1_000,
  webhookConcurrency: 8,
  webhookClaimMarginMs: 30_000,
  signingKeyGraceMs: 7 * 24 * 60 * 60_000
}

/** The settings in force. */
export class AppexecConfig extends Context.Tag("@appexec/core/AppexecConfig")<AppexecConfig, AppexecOptions>() {
  /** The defaults, with `overrides` applied. */
  static readonly layer = (overrides: Partial<AppexecOptions> = {}) =>
    Layer.succeed(AppexecConfig, { ...defaults, ...overrides })
}
