/**
 * The flags more than one command takes (docs/cli.md): where the database is (every command),
 * and the settings of the engine that `serve` and `worker` both run — claims, webhooks, signing
 * keys, media URLs, the admin port. The engine's defaults are `AppexecConfig.defaults`.
 */
import { AppexecConfig, SigningKeys } from "@appexec/core"
import { Options } from "@effect/cli"
import { Config, Effect, Either, Option, Schema } from "effect"
import { resolve } from "node:path"
import * as Database from "../Database.js"
import type { Claims } from "../Serve.js"
import * as Flags from "./Flags.js"

const engine = AppexecConfig.defaults

/** Where the SQLite database is when `--data` is not given. */
export const defaultData = "./.appexec"

/** The data directory of the SQLite database, made absolute. */
export const data: Options.Options<string> = Options.directory("data").pipe(
  Options.withPseudoName("DIR"),
  Options.withDescription(`Directory of the SQLite database (default ${defaultData})`),
  Options.withFallbackConfig(Config.string("APPEXEC_DATA")),
  Options.withDefault(defaultData),
  Options.map((dir) => resolve(dir))
)

/** `--database` and its settings (`Database`). */
export const database: Options.Options<Database.Database> = Database.options

/** The address `serve` listens on, and the one of a worker's admin port. */
export const defaultHost = "127.0.0.1"

/** `--host`. */
export const host: Options.Options<string> = Options.text("host").pipe(
  Options.withPseudoName("ADDR"),
  Options.withDescription(`Address to listen on (default ${defaultHost})`),
  Options.withFallbackConfig(Config.string("APPEXEC_HOST")),
  Options.withDefault(defaultHost)
)

/** `--allow-private-networks`. */
export const allowPrivateNetworks = Flags.toggle({
  name: "allow-private-networks",
  variable: "APPEXEC_ALLOW_PRIVATE_NETWORKS",
  description: "Let outbound requests (media, webhooks) reach private and loopback addresses"
})

/** `--max-running-per-workspace`: no cap when absent. */
export const maxRunningPerWorkspace = Flags.optionalCount({
  name: "max-running-per-workspace",
  variable: "APPEXEC_MAX_RUNNING_PER_WORKSPACE",
  description: "Most executions of one workspace running at once (default: no cap)"
})

/** How long claims last: of an execution by a worker, of a webhook delivery by a dispatcher. */
export const claims = {
  lease: Flags.duration(
    {
      name: "lease",
      variable: "APPEXEC_LEASE",
      description: "How long a worker's claim on an execution lasts unrenewed"
    },
    engine.lease,
    { positive: true }
  ),
  maxAttempts: Flags.count({
    name: "max-attempts",
    variable: "APPEXEC_MAX_ATTEMPTS",
    description: "Claims an execution may use up"
  }, engine.maxAttempts),
  webhookTimeout: Flags.duration(
    {
      name: "webhook-timeout",
      variable: "APPEXEC_WEBHOOK_TIMEOUT",
      description: "Time a receiver has"
    },
    engine.webhookTimeout,
    { positive: true }
  ),
  webhookClaimMargin: Flags.duration(
    {
      name: "webhook-claim-margin",
      variable: "APPEXEC_WEBHOOK_CLAIM_MARGIN",
      description: "How long a claim on a delivery outlasts the webhook timeout"
    },
    engine.webhookClaimMargin,
    { positive: true }
  ),
  drainTimeout: Flags.duration(
    {
      name: "drain-timeout",
      variable: "APPEXEC_DRAIN_TIMEOUT",
      description: "How long a stopping worker waits for running executions before it hands them back"
    },
    engine.drainTimeout,
    { positive: false }
  )
}

/** The claims flags of a parsed command, as `serve` and `work` take them. */
export const claimsOf = (parsed: Claims): Claims => ({
  lease: parsed.lease,
  maxAttempts: parsed.maxAttempts,
  webhookTimeout: parsed.webhookTimeout,
  webhookClaimMargin: parsed.webhookClaimMargin,
  drainTimeout: parsed.drainTimeout
})

/** `--webhook-retry-delays`. */
export const webhookRetryDelays = Flags.durations({
  name: "webhook-retry-delays",
  variable: "APPEXEC_WEBHOOK_RETRY_DELAYS",
  description: "Waits before webhook retries"
}, engine.webhookRetryDelays)

/** `--public-url`. */
export const publicUrl = Flags.url({
  name: "public-url",
  variable: "APPEXEC_PUBLIC_URL",
  description:
    "The URL clients reach this server at (behind a proxy, on another host): printed, and the base of signed media URLs"
})

/** `--media-base-url`. */
export const mediaBaseUrl = Flags.url({
  name: "media-base-url",
  variable: "APPEXEC_MEDIA_BASE_URL",
  description:
    "Public base URL of produced media (CDN, object storage): media URLs become <URL>/<key> and serve answers none"
})

/** A grace period of rotated-out signing keys under `--name` (zero allowed). */
export const grace = (name: string) =>
  Flags.duration(
    {
      name,
      variable: "APPEXEC_SIGNING_KEY_GRACE",
      description: "How long a rotated-out signing key stays in the published key set"
    },
    engine.signingKeyGrace,
    { positive: false }
  )

/** `--signing-key-grace` of `serve` and `worker` (`signing-key rotate` has `--grace`). */
export const signingKeyGrace = grace("signing-key-grace")

/** `--retention` of `serve` and `prune`, described for each. */
export const retention = (description: string) =>
  Flags.duration({ name: "retention", variable: "APPEXEC_RETENTION", description }, engine.retention, {
    positive: false
  })

/** `--signing-key-jwk`: a private Ed25519 JWK, checked. */
export const signingKeyJwk = Options.text("signing-key-jwk").pipe(
  Options.withPseudoName("JSON"),
  Options.withDescription(
    "The webhook signing key as a private Ed25519 JWK (JSON with kty, crv, d); generated when absent"
  ),
  Options.withFallbackConfig(Config.string("APPEXEC_SIGNING_KEY_JWK")),
  Options.optional,
  Options.mapEffect((text) => {
    if (Option.isNone(text)) return Effect.succeed(Option.none())
    const invalid = (why: string) => Flags.refuse("signing-key-jwk", `not a private Ed25519 JWK (${why})`)
    const jwk = Schema.decodeUnknownEither(Schema.parseJson(SigningKeys.PrivateJwk))(text.value)
    if (Either.isLeft(jwk)) return invalid("expected JSON with kty OKP, crv Ed25519 and d")
    const usable = SigningKeys.fromPrivateJwk(jwk.right)
    return Either.isLeft(usable) ? invalid(usable.left) : Effect.succeed(Option.some(jwk.right))
  })
)

/** `--admin-port`: off when absent. */
export const adminPort = Options.integer("admin-port").pipe(
  Options.withPseudoName("N"),
  Options.withDescription(
    "Serve Prometheus metrics at /metrics (and /healthz) on this port, on --host; off by default"
  ),
  Options.withFallbackConfig(Config.integer("APPEXEC_ADMIN_PORT")),
  Options.optional,
  Options.mapEffect((port) =>
    Option.isSome(port) && (port.value < 0 || port.value > 65535)
      ? Flags.refuse("admin-port", `${port.value} is not a port`)
      : Effect.succeed(port)
  )
)
