/**
 * The settings of the work (docs/cli.md#settings): how executions are claimed and run, how
 * webhooks go out and are signed, and retention — all taken by every process that runs a worker
 * (`appexec worker`, and `appexec serve` without `--no-worker`). Their defaults are the engine's
 * (`AppexecConfig.defaults`), never written again here. The signing key's and the lease's settings
 * also govern the API, which publishes the keys and judges which workers are live.
 */
import { AppexecConfig } from "@appexec/core"
import { type Duration, Either } from "effect"
import * as Setting from "./Setting.js"
import * as Values from "./Values.js"

const engine = AppexecConfig.defaults

const worker: ReadonlyArray<Setting.Part> = ["worker"]

/** `--concurrency N`. */
export const concurrency = Setting.make({
  name: "concurrency",
  variable: "APPEXEC_WORKER_CONCURRENCY",
  description: "executions this process runs at once",
  parts: worker,
  value: Values.count,
  default: engine.workerConcurrency
})

/** `--max-running-per-workspace N`. */
export const maxRunningPerWorkspace = Setting.make({
  name: "max-running-per-workspace",
  description: "most executions of one workspace running at once, counted over every worker on the database " +
    "(workers always take workspaces in turn); `appexec workspaces set NAME --max-running N` gives one workspace its own",
  parts: worker,
  value: Values.optionalCount,
  default: undefined,
  defaultText: "no cap"
})

/** A node type pattern: a name such as `image.resize`, with `*` for any part (`video.*`). */
const nodeTypePattern = (text: string): Either.Either<string, string> =>
  /^[A-Za-z0-9_.*-]{1,100}$/.test(text)
    ? Either.right(text)
    : Either.left(`'${text}' is not a node type pattern (a name such as image.resize, with * for any part: video.*)`)

/** `--node-types PATTERNS`. */
export const nodeTypes = Setting.make({
  name: "node-types",
  description: "the node types this process runs, comma-separated patterns (`video.*,image.*`, `provider.comfyui`): " +
    "its worker claims only executions whose every node type matches one and is installed here; the others wait " +
    "for a worker that runs them, their poll answer saying so (`waitingFor`) ([scaling](./scaling.md#pools))",
  parts: worker,
  value: Values.optional(Values.list("PATTERNS", nodeTypePattern, (pattern) => pattern), "all"),
  default: undefined,
  defaultText: "every installed type"
})

/** `--lease DURATION`. */
export const lease = Setting.make({
  name: "lease",
  description: "how long a worker's claim on an execution lasts unrenewed (renewed every third of it): after a " +
    "crash, the execution runs again once it has passed; the operator views judge a worker live by it",
  parts: ["api", "worker"],
  value: Values.duration({ positive: true }),
  default: engine.lease
})

/** `--max-attempts N`. */
export const maxAttempts = Setting.make({
  name: "max-attempts",
  description: "claims an execution may lose (a crashed worker's, a lost lease) before it fails; a claim handed " +
    "back by a worker that stopped does not count",
  parts: worker,
  value: Values.count,
  default: engine.maxAttempts
})

/** `--drain-timeout DURATION`. */
export const drainTimeout = Setting.make({
  name: "drain-timeout",
  description: "how long a stopping worker waits for running executions (saying each second what for) before it " +
    "hands them back to run again; `0s` hands them back at once ([operations](./operations.md#stopping))",
  parts: worker,
  value: Values.duration({ positive: false }),
  default: engine.drainTimeout
})

/** `--webhook-timeout DURATION`. */
export const webhookTimeout = Setting.make({
  name: "webhook-timeout",
  description: "time a receiver has to answer a webhook with a 2xx",
  parts: worker,
  value: Values.duration({ positive: true }),
  default: engine.webhookTimeout
})

/** `--webhook-claim-margin DURATION`. */
export const webhookClaimMargin = Setting.make({
  name: "webhook-claim-margin",
  description: "how long a claim on a delivery outlasts the webhook timeout: an attempt cut short by a crash is " +
    "sent again after both",
  parts: worker,
  value: Values.duration({ positive: true }),
  default: engine.webhookClaimMargin
})

/** `--webhook-retry-delays LIST`. */
export const webhookRetryDelays = Setting.make({
  name: "webhook-retry-delays",
  description: "waits before webhook retries (`ms`, `s`, `m`, `h`, `d`)",
  parts: worker,
  value: Values.durations,
  default: engine.webhookRetryDelays
})

/** `--signing-key-jwk JSON`: a secret. */
export const signingKeyJwk = Setting.make({
  name: "signing-key-jwk",
  description:
    "the webhook signing key as a private Ed25519 JWK, `{\"kty\":\"OKP\",\"crv\":\"Ed25519\",\"d\":\"…\"}`; " +
    "imported once, by the first process to start with it, so a later `signing-key rotate` survives restarts " +
    "([webhooks](./webhooks.md#signing-keys-and-rotation))",
  parts: ["api", "worker"],
  value: Values.privateJwk,
  default: undefined,
  defaultText: "none (generated and stored on the first start)",
  secret: true
})

/** `--signing-key-grace DURATION` (`signing-key rotate` reads it as `--grace`). */
export const signingKeyGrace = Setting.make({
  name: "signing-key-grace",
  description: "how long a signing key rotated out stays published in `GET /v1/webhooks/signing-key` (by " +
    "`signing-key rotate` too, as its `--grace`)",
  parts: ["api", "worker"],
  value: Values.duration({ positive: false }),
  default: engine.signingKeyGrace
})

const retentionDefinition: Setting.Definition<Duration.Duration> = {
  name: "retention",
  description: "delete finished executions, with their webhook deliveries and media, this long after they ended; " +
    "the processes that run executions look every hour and at start ([operations](./operations.md#retention))",
  parts: worker,
  value: Values.duration({ positive: true }),
  default: engine.retention,
  hint: "or run appexec prune --retention where you like"
}

/** `--retention DURATION`: where executions run. */
export const retention = Setting.make(retentionDefinition)

/** `appexec prune --retention DURATION`: the same setting, where `0ms` means every finished execution. */
export const pruneRetention = Setting.make({ ...retentionDefinition, value: Values.duration({ positive: false }) })

/** The settings of the work, in the order docs/cli.md lists them. */
export const group = {
  concurrency,
  maxRunningPerWorkspace,
  nodeTypes,
  lease,
  maxAttempts,
  drainTimeout,
  webhookTimeout,
  webhookClaimMargin,
  webhookRetryDelays,
  signingKeyJwk,
  signingKeyGrace,
  retention
}
