/**
 * Settings of an appexec instance: what a host may set (`AppexecOptions`, durations as
 * `Duration.DurationInput` such as `"30 seconds"` or a number of milliseconds), and the checked
 * settings in force (`AppexecConfig`, durations decoded). Settings that cannot work together
 * fail the layer with `InvalidConfiguration`, naming the setting. Durations as operators write
 * them in flags and environment variables (`30s`, `7d`) are read by `parseDuration`.
 */
import { Context, Duration, Effect, Either, Layer, Option, Redacted } from "effect"
import { InvalidConfiguration } from "./Errors.js"
import { fromPrivateJwk, type PrivateJwk } from "./internal/jwk.js"
import { isValidBrand } from "./WebhookSignature.js"

/** The settings a host may give; every one has a default. */
export interface AppexecOptions {
  /** Prefix of every API key. */
  readonly keyPrefix: string
  /** How long a claim on an execution lasts without renewal. */
  readonly lease: Duration.DurationInput
  /** How often a running worker renews its lease; shorter than `lease`. */
  readonly renewEvery: Duration.DurationInput
  /** How many claims an execution may use up (lost workers included) before it is failed. */
  readonly maxAttempts: number
  /** Execution timeout for apps that set none. */
  readonly defaultTimeout: Duration.DurationInput
  /** Nodes of one execution that run at the same time. */
  readonly nodeConcurrency: number
  /** Executions one worker runs at the same time. */
  readonly workerConcurrency: number
  /**
   * Most executions of one workspace running at once, counted over every worker on the storage;
   * no cap when absent. Workers take workspaces in turn either way.
   */
  readonly maxRunningPerWorkspace?: number | undefined
  /** How often an idle worker looks for work written by other processes. */
  readonly pollInterval: Duration.DurationInput
  /** How often a worker that runs executions asks the store for cancels made by other processes. */
  readonly cancelCheckInterval: Duration.DurationInput
  /**
   * Least time between two writes of one execution's progress and log lines
   * (docs/api.md#live-executions): a report after a quiet spell is written at once, the ones that
   * follow it within this time together at its end (progress coalesced to the newest per node).
   */
  readonly reportInterval: Duration.DurationInput
  /** Most event streams (`GET /v1/executions/{id}/events`) one API key may hold open at once. */
  readonly maxStreamsPerKey: number
  /** How long an `Idempotency-Key` of a start answers with its first execution. */
  readonly idempotencyKeyTtl: Duration.DurationInput
  /** How long a stopping worker waits for running executions before it releases them. */
  readonly drainTimeout: Duration.DurationInput
  /** Brand word of the webhook headers: `X-<brand>-Webhook-Signature`. */
  readonly webhookBrand: string
  /** Waits before each webhook retry after the first attempt; their count is the number of retries. */
  readonly webhookRetryDelays: ReadonlyArray<Duration.DurationInput>
  /** Time a receiver has to answer a webhook with a 2xx. */
  readonly webhookTimeout: Duration.DurationInput
  /** How often the webhook dispatcher looks for due deliveries when nothing woke it. */
  readonly webhookPollInterval: Duration.DurationInput
  /** Webhook deliveries one dispatcher sends at the same time. */
  readonly webhookConcurrency: number
  /**
   * How long a dispatcher's claim on a delivery outlasts the request's time limit. An attempt cut
   * short by a crash is sent again once `webhookTimeout + webhookClaimMargin` has passed.
   */
  readonly webhookClaimMargin: Duration.DurationInput
  /** How long a rotated-out signing key stays in the published key set. */
  readonly signingKeyGrace: Duration.DurationInput
  /** A signing key given by the operator (private JWK); when absent one is generated and stored. */
  readonly signingKeyJwk?: PrivateJwk | undefined
  /** How long finished executions (with their deliveries and media) are kept before retention deletes them. */
  readonly retention: Duration.DurationInput
  /** How often retention looks for finished executions past `retention`. */
  readonly retentionInterval: Duration.DurationInput
  /**
   * The master key (32 bytes) that seals the secrets the store holds (`SecretSealing`). Without
   * one, signing keys are stored in the clear (a warning says so at start).
   */
  readonly masterKey?: Redacted.Redacted<Uint8Array> | undefined
  /** Master keys used before `masterKey`: secrets they sealed still open, and are sealed again with `masterKey`. */
  readonly previousMasterKeys?: ReadonlyArray<Redacted.Redacted<Uint8Array>> | undefined
  /**
   * Master keys other processes may seal with soon (the first phase of a change of master key,
   * docs/secrets.md): secrets they sealed open here, and are left as they are.
   */
  readonly nextMasterKeys?: ReadonlyArray<Redacted.Redacted<Uint8Array>> | undefined
}

/** The defaults. */
export const defaults: AppexecOptions = {
  keyPrefix: "aex_",
  lease: "30 seconds",
  renewEvery: "10 seconds",
  maxAttempts: 3,
  defaultTimeout: "10 minutes",
  nodeConcurrency: 4,
  workerConcurrency: 4,
  pollInterval: "250 millis",
  cancelCheckInterval: "500 millis",
  reportInterval: "250 millis",
  maxStreamsPerKey: 100,
  idempotencyKeyTtl: "24 hours",
  drainTimeout: "10 seconds",
  webhookBrand: "Service",
  webhookRetryDelays: ["5 seconds", "30 seconds", "2 minutes"],
  webhookTimeout: "10 seconds",
  webhookPollInterval: "1 second",
  webhookConcurrency: 32,
  webhookClaimMargin: "30 seconds",
  signingKeyGrace: "7 days",
  retention: "30 days",
  retentionInterval: "1 hour"
}

/** The checked settings in force: every duration decoded. */
export interface Settings {
  readonly keyPrefix: string
  readonly lease: Duration.Duration
  readonly renewEvery: Duration.Duration
  readonly maxAttempts: number
  readonly defaultTimeout: Duration.Duration
  readonly nodeConcurrency: number
  readonly workerConcurrency: number
  readonly maxRunningPerWorkspace: number | undefined
  readonly pollInterval: Duration.Duration
  readonly cancelCheckInterval: Duration.Duration
  readonly reportInterval: Duration.Duration
  readonly maxStreamsPerKey: number
  readonly idempotencyKeyTtl: Duration.Duration
  readonly drainTimeout: Duration.Duration
  readonly webhookBrand: string
  readonly webhookRetryDelays: ReadonlyArray<Duration.Duration>
  readonly webhookTimeout: Duration.Duration
  readonly webhookPollInterval: Duration.Duration
  readonly webhookConcurrency: number
  readonly webhookClaimMargin: Duration.Duration
  readonly signingKeyGrace: Duration.Duration
  readonly signingKeyJwk: PrivateJwk | undefined
  readonly retention: Duration.Duration
  readonly retentionInterval: Duration.Duration
  readonly masterKey: Redacted.Redacted<Uint8Array> | undefined
  readonly previousMasterKeys: ReadonlyArray<Redacted.Redacted<Uint8Array>>
  readonly nextMasterKeys: ReadonlyArray<Redacted.Redacted<Uint8Array>>
}

/** The settings in force. */
export class AppexecConfig extends Context.Tag("@appexec/core/AppexecConfig")<AppexecConfig, Settings>() {
  /** The defaults with `overrides` applied, checked; settings that cannot work fail the layer. */
  static readonly layer = (overrides: Partial<AppexecOptions> = {}): Layer.Layer<AppexecConfig, InvalidConfiguration> =>
    Layer.effect(AppexecConfig, Either.match(resolve(overrides), { onLeft: Effect.fail, onRight: Effect.succeed }))
}

const invalid = (setting: string, reason: string) => Either.left(new InvalidConfiguration({ setting, reason }))

const isWholeAtLeast = (n: number, min: number) => Number.isInteger(n) && n >= min

/** The settings of `overrides` over the defaults, or the first that cannot work. */
export const resolve = (overrides: Partial<AppexecOptions> = {}): Either.Either<Settings, InvalidConfiguration> => {
  const o = { ...defaults, ...overrides }
  const durations: Record<string, Duration.Duration> = {}
  for (
    const name of [
      "lease",
      "renewEvery",
      "defaultTimeout",
      "pollInterval",
      "cancelCheckInterval",
      "reportInterval",
      "idempotencyKeyTtl",
      "drainTimeout",
      "webhookTimeout",
      "webhookPollInterval",
      "webhookClaimMargin",
      "signingKeyGrace",
      "retention",
      "retentionInterval"
    ] as const
  ) {
    const decoded = Duration.decodeUnknown(o[name])
    if (decoded._tag === "None" || !Duration.isFinite(decoded.value)) return invalid(name, "not a finite duration")
    durations[name] = decoded.value
  }
  const delays: Array<Duration.Duration> = []
  for (const delay of o.webhookRetryDelays) {
    const decoded = Duration.decodeUnknown(delay)
    if (decoded._tag === "None" || !Duration.isFinite(decoded.value)) {
      return invalid("webhookRetryDelays", "each delay must be a finite duration")
    }
    delays.push(decoded.value)
  }
  const settings: Settings = {
    keyPrefix: o.keyPrefix,
    lease: durations.lease!,
    renewEvery: durations.renewEvery!,
    maxAttempts: o.maxAttempts,
    defaultTimeout: durations.defaultTimeout!,
    nodeConcurrency: o.nodeConcurrency,
    workerConcurrency: o.workerConcurrency,
    maxRunningPerWorkspace: o.maxRunningPerWorkspace,
    pollInterval: durations.pollInterval!,
    cancelCheckInterval: durations.cancelCheckInterval!,
    reportInterval: durations.reportInterval!,
    maxStreamsPerKey: o.maxStreamsPerKey,
    idempotencyKeyTtl: durations.idempotencyKeyTtl!,
    drainTimeout: durations.drainTimeout!,
    webhookBrand: o.webhookBrand,
    webhookRetryDelays: delays,
    webhookTimeout: durations.webhookTimeout!,
    webhookPollInterval: durations.webhookPollInterval!,
    webhookConcurrency: o.webhookConcurrency,
    webhookClaimMargin: durations.webhookClaimMargin!,
    signingKeyGrace: durations.signingKeyGrace!,
    signingKeyJwk: o.signingKeyJwk,
    retention: durations.retention!,
    retentionInterval: durations.retentionInterval!,
    masterKey: o.masterKey,
    previousMasterKeys: o.previousMasterKeys ?? [],
    nextMasterKeys: o.nextMasterKeys ?? []
  }
  if (!/^[A-Za-z0-9_]{1,16}$/.test(settings.keyPrefix)) return invalid("keyPrefix", "1 to 16 letters, digits or '_'")
  if (!isValidBrand(settings.webhookBrand)) {
    return invalid("webhookBrand", "1 to 32 letters or digits, words joined by single hyphens")
  }
  if (Duration.toMillis(settings.lease) < 1) return invalid("lease", "must be at least 1 ms")
  if (!Duration.lessThan(settings.renewEvery, settings.lease)) {
    return invalid("renewEvery", "must be shorter than lease")
  }
  if (Duration.toMillis(settings.renewEvery) < 1) return invalid("renewEvery", "must be at least 1 ms")
  if (Duration.toMillis(settings.cancelCheckInterval) < 1) {
    return invalid("cancelCheckInterval", "must be at least 1 ms")
  }
  if (Duration.toMillis(settings.idempotencyKeyTtl) < 1000) return invalid("idempotencyKeyTtl", "must be at least 1 s")
  for (
    const [name, value] of [
      ["maxAttempts", settings.maxAttempts],
      ["nodeConcurrency", settings.nodeConcurrency],
      ["workerConcurrency", settings.workerConcurrency],
      ["webhookConcurrency", settings.webhookConcurrency],
      ["maxStreamsPerKey", settings.maxStreamsPerKey]
    ] as const
  ) {
    if (!isWholeAtLeast(value, 1)) return invalid(name, "must be a whole number of at least 1")
  }
  if (Duration.toMillis(settings.retention) < 1) return invalid("retention", "must be at least 1 ms")
  if (Duration.toMillis(settings.retentionInterval) < 1) return invalid("retentionInterval", "must be at least 1 ms")
  if (settings.maxRunningPerWorkspace !== undefined && !isWholeAtLeast(settings.maxRunningPerWorkspace, 1)) {
    return invalid("maxRunningPerWorkspace", "must be a whole number of at least 1")
  }
  if (settings.masterKey !== undefined && Redacted.value(settings.masterKey).length !== 32) {
    return invalid("masterKey", "must be 32 bytes")
  }
  for (const name of ["previousMasterKeys", "nextMasterKeys"] as const) {
    if (settings[name].some((key) => Redacted.value(key).length !== 32)) return invalid(name, "each must be 32 bytes")
    if (settings.masterKey === undefined && settings[name].length > 0) return invalid(name, "given without a masterKey")
  }
  if (settings.signingKeyJwk !== undefined) {
    const usable = fromPrivateJwk(settings.signingKeyJwk)
    if (Either.isLeft(usable)) return invalid("signingKeyJwk", usable.left)
  }
  return Either.right(settings)
}

/** Milliseconds of a decoded duration, for arithmetic on epoch times. */
export const millis = (duration: Duration.Duration): number => Duration.toMillis(duration)

const durationUnits: Readonly<Record<string, number>> = { ms: 1, s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000 }

/**
 * A duration as an operator writes one in a flag or an environment variable: a whole number and
 * a unit, `500ms`, `30s`, `2m`, `12h` or `7d` (spaces around it ignored); `None` for anything
 * else (no sign, fraction, space inside, or other unit).
 */
export const parseDuration = (text: string): Option.Option<Duration.Duration> => {
  const match = /^(\d+)(ms|s|m|h|d)$/.exec(text.trim())
  const unit = match === null ? undefined : durationUnits[match[2]!]
  const ms = match === null || unit === undefined ? Number.NaN : Number(match[1]) * unit
  return Number.isFinite(ms) ? Option.some(Duration.millis(ms)) : Option.none()
}

/**
 * A comma-separated list of `parseDuration` durations, such as `5s,30s,2m` (empty items are
 * skipped, so an empty text is the empty list); `None` when one item is not a duration.
 */
export const parseDurations = (text: string): Option.Option<ReadonlyArray<Duration.Duration>> =>
  Option.all(text.split(",").filter((item) => item.trim() !== "").map(parseDuration))
