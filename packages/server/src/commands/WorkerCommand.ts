/**
 * `appexec worker` (docs/cli.md): the command and how its settings become the options of `work`.
 * It takes every setting of the work (`Catalog.worker`, the same definitions `serve` takes); a
 * setting of the API alone given as a flag is refused before the command parses, naming
 * `serve` (`Cli`). `workOf` is the one mapping of the work's settings, for `serve` too.
 */
import { Errors } from "@appexec/core"
import { Command } from "@effect/cli"
import { Effect, Either } from "effect"
import * as Database from "../Database.js"
import * as MediaStorage from "../MediaStorage.js"
import { baseUrlOf } from "../Serve.js"
import * as ApiSettings from "../settings/ApiSettings.js"
import * as Catalog from "../settings/Catalog.js"
import * as CliOptions from "../settings/CliOptions.js"
import * as NodeSettings from "../settings/NodeSettings.js"
import * as ProcessSettings from "../settings/ProcessSettings.js"
import type * as Resolve from "../settings/Resolve.js"
import * as SharedSettings from "../settings/SharedSettings.js"
import * as StoreSettings from "../settings/StoreSettings.js"
import * as WorkSettings from "../settings/WorkSettings.js"
import type * as Work from "../Work.js"
import { work, type WorkerOptions } from "../WorkerProcess.js"

/** The API's URL when `--public-url` is not given: a default `serve` on this machine. */
export const defaultPublicUrl = baseUrlOf(ApiSettings.defaultHost, ApiSettings.defaultPort)

/**
 * The work's settings in force as a process takes them (`serve` and `worker` alike): claims,
 * webhooks, signing key, retention, the outbound address policy, the nodes' limits.
 */
export const workOf = (settings: Resolve.Resolved): Effect.Effect<Work.Work, Errors.InvalidConfiguration> => {
  const get = settings.get
  // Each limit was read by its setting; NodesSettings' own schema makes them its settings.
  const nodes = Either.mapLeft(
    NodeSettings.nodesSettings(get),
    (error) => new Errors.InvalidConfiguration({ setting: "the nodes' limits", reason: error.message })
  )
  return Effect.map(nodes, (nodes) => ({
    concurrency: get(WorkSettings.concurrency),
    maxRunningPerWorkspace: get(WorkSettings.maxRunningPerWorkspace),
    nodeTypes: get(WorkSettings.nodeTypes),
    claims: {
      lease: get(WorkSettings.lease),
      maxAttempts: get(WorkSettings.maxAttempts),
      webhookTimeout: get(WorkSettings.webhookTimeout),
      webhookClaimMargin: get(WorkSettings.webhookClaimMargin),
      drainTimeout: get(WorkSettings.drainTimeout)
    },
    webhookRetryDelays: get(WorkSettings.webhookRetryDelays),
    signingKeyGrace: get(WorkSettings.signingKeyGrace),
    signingKeyJwk: get(WorkSettings.signingKeyJwk),
    retention: get(WorkSettings.retention),
    allowPrivateNetworks: get(SharedSettings.allowPrivateNetworks),
    allowHosts: get(SharedSettings.allowHosts),
    nodes,
    openaiBaseUrl: get(NodeSettings.openaiBaseUrl),
    comfyui: get(NodeSettings.comfyui),
    comfyuiAuthSecret: get(NodeSettings.comfyuiAuthSecret),
    ocr: {
      threads: get(NodeSettings.ocrThreads),
      maxPixels: get(NodeSettings.ocrMaxPixels),
      timeout: get(NodeSettings.ocrTimeout),
      idleTimeout: get(NodeSettings.ocrIdleTimeout)
    }
  }))
}

/** `worker`'s settings in force, from its flags, the environment and the config file. */
export const settings = CliOptions.resolvedOf(Catalog.worker, () => Either.right("worker"))

/** The options of `worker` from its settings in force. */
export const optionsOf = (settings: Resolve.Resolved) =>
  Effect.gen(function*() {
    const get = settings.get
    const media = yield* MediaStorage.fromSettings(SharedSettings.mediaOf(settings))
    const options: WorkerOptions = {
      ...(yield* workOf(settings)),
      dataDir: get(StoreSettings.data),
      database: yield* Database.fromSettings(settings),
      // Media URLs name the API, which this process does not serve.
      publicUrl: get(SharedSettings.publicUrl) ?? defaultPublicUrl,
      mediaBaseUrl: get(SharedSettings.mediaBaseUrl),
      media,
      adminPort: get(SharedSettings.adminPort),
      adminHost: get(SharedSettings.adminHost),
      name: get(ProcessSettings.name)
    }
    return options
  })

/** `appexec worker`. */
export const workerCommand = Command.make(
  "worker",
  { settings },
  ({ settings }) => Effect.flatMap(optionsOf(settings), work)
).pipe(
  Command.withDescription(
    "Run executions and deliver webhooks, with no HTTP, beside `serve --no-worker` on the same database"
  )
)
