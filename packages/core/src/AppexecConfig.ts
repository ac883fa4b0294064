/**
 * Settings of an appexec instance, defined once (`Options`): each field with its check, its
 * default and its description side by side. What a host may set is the schema's encoded side
 * (`AppexecOptions`, durations as `Duration.DurationInput` such as `"30 seconds"` or a number of
 * milliseconds, every field optional); the checked settings in force are its decoded side
 * (`Settings`, durations decoded, defaults filled in). Settings that cannot work together fail
 * the layer with `InvalidConfiguration`, naming the setting. Durations as operators write them in
 * flags and environment variables (`30s`, `7d`) are read by `parseDuration`.
 */
import { Context, Duration, Effect, Either, Layer, Option, ParseResult, Redacted, Schema, SchemaAST } from "effect"
import { InvalidConfiguration } from "./Errors.js"
import { fromPrivateJwk, PrivateJwk } from "./internal/crypto/jwk.js"
import { isValidBrand } from "./WebhookSignature.js"

/** Any `Duration.DurationInput` (a `Duration`, a number of milliseconds, `"30 seconds"`, …). */
const DurationInput = Schema.declare(
  (input: unknown): input is Duration.DurationInput => Option.isSome(Duration.decodeUnknown(input)),
  { identifier: "DurationInput", message: () => "not a finite duration" }
)

/** A `Duration.DurationInput`, decoded; infinity refused. */
export const FiniteDuration = Schema.transformOrFail(DurationInput, Schema.DurationFromSelf, {
  strict: true,
  decode: (input, _, ast) =>
    Option.match(Option.filter(Duration.decodeUnknown(input), Duration.isFinite), {
      onNone: () => ParseResult.fail(new ParseResult.Type(ast, input, "not a finite duration")),
      onSome: ParseResult.succeed
    }),
  encode: ParseResult.succeed
})

/** A finite duration of at least `ms` milliseconds. */
const atLeast = (ms: number, shown: string) =>
  FiniteDuration.pipe(Schema.filter((d) => Duration.toMillis(d) >= ms, { message: () => `must be at least ${shown}` }))

/** A whole number of at least 1. */
const Count = Schema.Number.pipe(
  Schema.filter((n) => Number.isInteger(n) && n >= 1, { message: () => "must be a whole number of at least 1" })
)

/** A master key: 32 bytes, never shown. */
const MasterKey = Schema.RedactedFromSelf(Schema.Uint8ArrayFromSelf)

/** A field with its default (of the decoded side) and what it is for. */
const field = <S extends Schema.Schema.All>(schema: S, fallback: Schema.Schema.Type<S>, description: string) =>
  Schema.optionalWith(schema, { default: () => fallback }).annotations({ description })

/** A field with no default: absent means none. */
const optionalField = <S extends Schema.Schema.All>(schema: S, description: string) =>
  Schema.optional(schema).annotations({ description })

const fields = {
  keyPrefix: field(
    Schema.String.pipe(Schema.pattern(/^[A-Za-z0-9_]{1,16}$/, { message: () => "1 to 16 letters, digits or '_'" })),
    "aex_",
    "Prefix of every API key."
  ),
  lease: field(atLeast(1, "1 ms"), Duration.seconds(30), "How long a claim on an execution lasts without renewal."),
  renewEvery: field(
    atLeast(1, "1 ms"),
    Duration.seconds(10),
    "How often a running worker renews its lease; shorter than `lease`."
  ),
  maxAttempts: field(
    Count,
    3,
    "How many claims an execution may use up (lost workers included) before it is failed."
  ),
  defaultTimeout: field(FiniteDuration, Duration.minutes(10), "Execution timeout for apps that set none."),
  nodeConcurrency: field(Count, 4, "Nodes of one execution that run at the same time."),
  workerConcurrency: field(Count, 4, "Executions one worker runs at the same time."),
  maxRunningPerWorkspace: optionalField(
    Count,
    "Most executions of one workspace running at once, counted over every worker on the storage; no cap when " +
      "absent. Workers take workspaces in turn either way."
  ),
  nodeTypes: optionalField(
    Schema.Array(
      Schema.String.pipe(
        Schema.pattern(/^[A-Za-z0-9_.*-]{1,100}$/, {
          message: () => "node type patterns are names such as image.resize, with * for any part (video.*)"
        })
      )
    ),
    "The node types this process's worker runs, as patterns (`video.*,image.*`, `provider.comfyui`): it claims " +
      "only executions whose every node type matches one and is installed here. Absent: every installed type."
  ),
  pollInterval: field(
    FiniteDuration,
    Duration.millis(250),
    "How often an idle worker looks for work written by other processes."
  ),
  cancelCheckInterval: field(
    atLeast(1, "1 ms"),
    Duration.millis(500),
    "How often a worker that runs executions asks the store for cancels made by other processes."
  ),
  reportInterval: field(
    FiniteDuration,
    Duration.millis(250),
    "Least time between two writes of one execution's progress and log lines (docs/api.md#live-executions): a " +
      "report after a quiet spell is written at once, the ones that follow it within this time together at its end."
  ),
  maxStreamsPerKey: field(
    Count,
    100,
    "Most event streams (`GET /v1/executions/{id}/events`) one API key may hold open at once."
  ),
  idempotencyKeyTtl: field(
    atLeast(1000, "1 s"),
    Duration.hours(24),
    "How long an `Idempotency-Key` of a start answers with its first execution."
  ),
  drainTimeout: field(
    FiniteDuration,
    Duration.seconds(10),
    "How long a stopping worker waits for running executions before it releases them."
  ),
  webhookBrand: field(
    Schema.String.pipe(
      Schema.filter(isValidBrand, { message: () => "1 to 32 letters or digits, words joined by single hyphens" })
    ),
    "Service",
    "Brand word of the webhook headers: `X-<brand>-Webhook-Signature`."
  ),
  webhookRetryDelays: field(
    Schema.Array(FiniteDuration.annotations({ message: () => "each delay must be a finite duration" })),
    [Duration.seconds(5), Duration.seconds(30), Duration.minutes(2)],
    "Waits before each webhook retry after the first attempt; their count is the number of retries."
  ),
  webhookTimeout: field(FiniteDuration, Duration.seconds(10), "Time a receiver has to answer a webhook with a 2xx."),
  webhookPollInterval: field(
    FiniteDuration,
    Duration.seconds(1),
    "How often the webhook dispatcher looks for due deliveries when nothing woke it."
  ),
  webhookConcurrency: field(Count, 32, "Webhook deliveries one dispatcher sends at the same time."),
  webhookClaimMargin: field(
    FiniteDuration,
    Duration.seconds(30),
    "How long a dispatcher's claim on a delivery outlasts the request's time limit: an attempt cut short by a " +
      "crash is sent again once `webhookTimeout + webhookClaimMargin` has passed."
  ),
  signingKeyGrace: field(
    FiniteDuration,
    Duration.days(7),
    "How long a rotated-out signing key stays in the published key set."
  ),
  signingKeyJwk: optionalField(
    PrivateJwk.pipe(
      Schema.filter((jwk) => Either.match(fromPrivateJwk(jwk), { onLeft: (why) => why, onRight: () => true }))
    ),
    "A signing key given by the operator (private JWK); when absent one is generated and stored."
  ),
  retention: field(
    atLeast(1, "1 ms"),
    Duration.days(30),
    "How long finished executions (with their deliveries and media) are kept before retention deletes them."
  ),
  retentionInterval: field(
    atLeast(1, "1 ms"),
    Duration.hours(1),
    "How often retention looks for finished executions past `retention`."
  ),
  masterKey: optionalField(
    MasterKey.pipe(Schema.filter((key) => Redacted.value(key).length === 32, { message: () => "must be 32 bytes" })),
    "The master key (32 bytes) that seals the secrets the store holds (`SecretSealing`). Without one, signing keys " +
      "are stored in the clear (a warning says so at start)."
  ),
  previousMasterKeys: field(
    Schema.Array(MasterKey).pipe(
      Schema.filter((keys) => keys.every((key) => Redacted.value(key).length === 32), {
        message: () => "each must be 32 bytes"
      })
    ),
    [],
    "Master keys used before `masterKey`: secrets they sealed still open, and are sealed again with `masterKey`."
  ),
  nextMasterKeys: field(
    Schema.Array(MasterKey).pipe(
      Schema.filter((keys) => keys.every((key) => Redacted.value(key).length === 32), {
        message: () => "each must be 32 bytes"
      })
    ),
    [],
    "Master keys other processes may seal with soon (the first phase of a change of master key, " +
      "docs/secrets.md): secrets they sealed open here, and are left as they are."
  )
}

/**
 * The settings of an instance, each field with its check, default and description; decoding
 * also checks the settings that depend on each other (`renewEvery` shorter than `lease`, no
 * previous or next master keys without a current one).
 */
export const Options = Schema.Struct(fields).pipe(
  Schema.filter((s) =>
    !Duration.lessThan(s.renewEvery, s.lease)
      ? { path: ["renewEvery"], message: "must be shorter than lease" }
      : s.masterKey === undefined && s.previousMasterKeys.length > 0
      ? { path: ["previousMasterKeys"], message: "given without a masterKey" }
      : s.masterKey === undefined && s.nextMasterKeys.length > 0
      ? { path: ["nextMasterKeys"], message: "given without a masterKey" }
      : true
  )
)

/** What each setting is for, by name: the description beside its field. */
export const descriptions: Readonly<Record<string, string>> = Object.fromEntries(
  Object.entries(fields).map(([name, field]) => {
    const ast = field.ast
    const annotated = ast._tag === "PropertySignatureTransformation" ? ast.to : ast
    return [name, Option.getOrElse(SchemaAST.getDescriptionAnnotation(annotated), () => "")]
  })
)

/** The settings a host may give; every one has a default (or means none when absent). */
export type AppexecOptions = Schema.Schema.Encoded<typeof Options>

/** The checked settings in force: every duration decoded, every default filled in. */
export type Settings = Schema.Schema.Type<typeof Options>

/** The defaults, decoded. */
export const defaults: Settings = Schema.decodeSync(Options)({})

/** The settings in force. */
export class AppexecConfig extends Context.Tag("@appexec/core/AppexecConfig")<AppexecConfig, Settings>() {
  /** The defaults with `overrides` applied, checked; settings that cannot work fail the layer. */
  static readonly layer = (overrides: Partial<AppexecOptions> = {}): Layer.Layer<AppexecConfig, InvalidConfiguration> =>
    Layer.effect(AppexecConfig, Either.match(resolve(overrides), { onLeft: Effect.fail, onRight: Effect.succeed }))
}

const decode = Schema.decodeUnknownEither(Options)

/** The settings of `overrides` over the defaults, or the first that cannot work, named. */
export const resolve = (overrides: Partial<AppexecOptions> = {}): Either.Either<Settings, InvalidConfiguration> =>
  Either.mapLeft(decode(overrides), (error) => {
    const [issue] = ParseResult.ArrayFormatter.formatErrorSync(error)
    return new InvalidConfiguration({
      setting: issue === undefined ? "settings" : String(issue.path[0] ?? "settings"),
      reason: issue?.message ?? "not valid"
    })
  })

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
