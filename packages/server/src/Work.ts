/**
 * The settings of the work and of the outbound address policy as a process takes them (`serve`
 * and `worker` alike, docs/cli.md#settings): how executions are claimed and run, how webhooks go
 * out and are signed, retention, which addresses outbound requests may reach, and the built-in
 * nodes' limits — and the engine settings they make (`configOf`). One mapping for both processes,
 * so that a setting means the same wherever it is given.
 */
import type { AppexecConfig, SigningKeys } from "@appexec/core"
import type { NodesSettings } from "@appexec/nodes"
import { ComfyuiSettings } from "@appexec/nodes-comfyui"
import type { OcrSettings } from "@appexec/nodes-ocr"
import type { AddressPolicy } from "@appexec/platform-node"
import { Duration, Option } from "effect"

/**
 * How long claims last (docs/cli.md): a worker's on an execution (renewed every third of it), the
 * claims an execution may use up, a dispatcher's on a delivery beyond the webhook timeout.
 */
export interface Claims {
  readonly lease: Duration.DurationInput
  readonly maxAttempts: number
  readonly webhookTimeout: Duration.DurationInput
  readonly webhookClaimMargin: Duration.DurationInput
  /** How long a stopping worker keeps its claims for running executions before it hands them back. */
  readonly drainTimeout: Duration.DurationInput
}

/** The settings of the work and of outbound requests; absent ones are the engine's defaults. */
export interface Work {
  /** Executions this process runs at once (default: the engine's, 4). */
  readonly concurrency?: number | undefined
  /** Most executions of one workspace running at once across every worker on the database (default: no cap). */
  readonly maxRunningPerWorkspace?: number | undefined
  /** The node types this process's worker runs, as patterns (default: every installed type). */
  readonly nodeTypes?: ReadonlyArray<string> | undefined
  /** How long claims last (absent: the engine's defaults). */
  readonly claims?: Claims | undefined
  readonly webhookRetryDelays?: ReadonlyArray<Duration.DurationInput> | undefined
  /** How long a rotated-out signing key stays published (default: the engine's, 7 days). */
  readonly signingKeyGrace?: Duration.DurationInput | undefined
  /** The webhook signing key given by the operator; generated and stored when absent. */
  readonly signingKeyJwk?: SigningKeys.PrivateJwk | undefined
  /** How long finished executions are kept (default: the engine's, 30 days), where executions run. */
  readonly retention?: Duration.DurationInput | undefined
  /** Let outbound requests (webhooks, media, provider calls) reach private and loopback addresses. */
  readonly allowPrivateNetworks: boolean
  /** Hosts outbound requests may reach whatever their addresses (`--allow-hosts`). */
  readonly allowHosts?: ReadonlyArray<AddressPolicy.AllowedHost> | undefined
  /** The built-in nodes' limits (absent: their defaults). */
  readonly nodes?: NodesSettings.Overrides | undefined
  /** The default API root of `provider.openai` (absent: OpenAI's). */
  readonly openaiBaseUrl?: string | undefined
  /** The ComfyUI servers of `provider.comfyui` (absent: none); outbound requests may reach their hosts. */
  readonly comfyui?: ReadonlyArray<string> | undefined
  /** The secret sent as `Authorization` to the ComfyUI servers (absent: none). */
  readonly comfyuiAuthSecret?: string | undefined
  /** The settings of `image.ocr`'s worker threads (absent ones: its defaults). */
  readonly ocr?: Partial<OcrSettings.Settings> | undefined
}

/** The hosts outbound requests may reach: `--allow-hosts`, and the ComfyUI servers' hosts with their ports. */
export const allowedHostsOf = (work: Work): ReadonlyArray<AddressPolicy.AllowedHost> => [
  ...(work.allowHosts ?? []),
  ...(work.comfyui ?? []).map((server) => {
    const url = new URL(ComfyuiSettings.serverOf(server).url)
    return { host: url.hostname, port: Number(url.port === "" ? (url.protocol === "https:" ? 443 : 80) : url.port) }
  })
]

/** The engine settings of `claims`: the lease is renewed every third of it (a lease that is no duration is left for the config's check). */
export const claimSettings = (claims: Claims) => {
  const lease = Duration.decodeUnknown(claims.lease)
  return {
    lease: claims.lease,
    ...(Option.isSome(lease)
      ? { renewEvery: Duration.millis(Math.max(1, Math.floor(Duration.toMillis(lease.value) / 3))) }
      : {}),
    maxAttempts: claims.maxAttempts,
    webhookTimeout: claims.webhookTimeout,
    webhookClaimMargin: claims.webhookClaimMargin,
    drainTimeout: claims.drainTimeout
  }
}

/** The engine settings `work` sets; the others stay the engine's defaults. */
export const configOf = (work: Work): Partial<AppexecConfig.AppexecOptions> => ({
  ...(work.concurrency === undefined ? {} : { workerConcurrency: work.concurrency }),
  ...(work.maxRunningPerWorkspace === undefined ? {} : { maxRunningPerWorkspace: work.maxRunningPerWorkspace }),
  ...(work.nodeTypes === undefined ? {} : { nodeTypes: work.nodeTypes }),
  ...(work.claims === undefined ? {} : claimSettings(work.claims)),
  ...(work.webhookRetryDelays === undefined ? {} : { webhookRetryDelays: work.webhookRetryDelays }),
  ...(work.signingKeyGrace === undefined ? {} : { signingKeyGrace: work.signingKeyGrace }),
  ...(work.signingKeyJwk === undefined ? {} : { signingKeyJwk: work.signingKeyJwk }),
  ...(work.retention === undefined ? {} : { retention: work.retention })
})
