/**
 * `appexec worker` (docs/cli.md): its flags and the command. It takes `serve`'s engine flags
 * (`SharedFlags`) and `--concurrency`, whose default is the engine's `workerConcurrency`.
 */
import { AppexecConfig } from "@appexec/core"
import { Command } from "@effect/cli"
import { Effect, Option } from "effect"
import * as Flags from "./internal/Flags.js"
import * as SharedFlags from "./internal/SharedFlags.js"
import * as MediaStorage from "./MediaStorage.js"
import { baseUrlOf } from "./Serve.js"
import { defaultPort } from "./ServeCommand.js"
import { work } from "./WorkerProcess.js"

/** The flags of `worker`, by the name its handler reads them. */
export const flags = {
  data: SharedFlags.data,
  database: SharedFlags.database,
  concurrency: Flags.count({
    name: "concurrency",
    variable: "APPEXEC_WORKER_CONCURRENCY",
    description: "Executions this process runs at once"
  }, AppexecConfig.defaults.workerConcurrency),
  maxRunningPerWorkspace: SharedFlags.maxRunningPerWorkspace,
  ...SharedFlags.claims,
  allowPrivateNetworks: SharedFlags.allowPrivateNetworks,
  webhookRetryDelays: SharedFlags.webhookRetryDelays,
  mediaBaseUrl: SharedFlags.mediaBaseUrl,
  media: MediaStorage.location,
  mediaEndpoint: MediaStorage.endpoint,
  mediaDirect: MediaStorage.direct,
  publicUrl: SharedFlags.publicUrl,
  signingKeyGrace: SharedFlags.signingKeyGrace,
  signingKeyJwk: SharedFlags.signingKeyJwk,
  adminPort: SharedFlags.adminPort,
  host: SharedFlags.host
}

/** The API's URL when `--public-url` is not given: a default `serve` on this machine. */
export const defaultPublicUrl = baseUrlOf(SharedFlags.defaultHost, defaultPort)

/** `appexec worker`. */
export const workerCommand = Command.make(
  "worker",
  flags,
  (o) =>
    Effect.flatMap(MediaStorage.fromFlags(o), (media) =>
      work({
        dataDir: o.data,
        database: o.database,
        concurrency: o.concurrency,
        maxRunningPerWorkspace: Option.getOrUndefined(o.maxRunningPerWorkspace),
        claims: SharedFlags.claimsOf(o),
        allowPrivateNetworks: o.allowPrivateNetworks,
        webhookRetryDelays: o.webhookRetryDelays,
        // Media URLs name the API, which this process does not serve.
        publicUrl: Option.getOrElse(o.publicUrl, () => defaultPublicUrl),
        mediaBaseUrl: Option.getOrUndefined(o.mediaBaseUrl),
        media,
        signingKeyGrace: o.signingKeyGrace,
        signingKeyJwk: Option.getOrUndefined(o.signingKeyJwk),
        adminPort: Option.getOrUndefined(o.adminPort),
        host: o.host
      }))
).pipe(
  Command.withDescription(
    "Run executions and deliver webhooks, with no HTTP, beside `serve --no-worker` on the same database"
  )
)
