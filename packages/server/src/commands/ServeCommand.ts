/**
 * `appexec serve` (docs/cli.md): the command and how its settings become the options of `serve`.
 * It takes every setting of the API or of the work (`Catalog.serve`, shared with `worker` by
 * construction); with `--no-worker` it runs no work, and refuses the work's settings given as
 * flags, naming the processes that need them.
 */
import { Command } from "@effect/cli"
import { Effect, Either } from "effect"
import * as Bootstrap from "../Bootstrap.js"
import * as Database from "../Database.js"
import * as MediaStorage from "../MediaStorage.js"
import { serve, type ServeOptions } from "../Serve.js"
import * as ApiSettings from "../settings/ApiSettings.js"
import * as Catalog from "../settings/Catalog.js"
import * as CliOptions from "../settings/CliOptions.js"
import * as ProcessSettings from "../settings/ProcessSettings.js"
import * as Resolve from "../settings/Resolve.js"
import type * as Setting from "../settings/Setting.js"
import * as SharedSettings from "../settings/SharedSettings.js"
import * as StoreSettings from "../settings/StoreSettings.js"
import * as WorkerCommand from "./WorkerCommand.js"

/** The port `serve` listens on when `--port` is not given. */
export const defaultPort = ApiSettings.defaultPort

/** `serve`'s role: `api` with `--no-worker` (flag, variable or file), else `serve`. */
export const roleOf = (sources: Resolve.Sources): Either.Either<Setting.Role, string> =>
  Either.map(
    Resolve.resolve([ApiSettings.noWorker], "serve", sources),
    (resolved) => (resolved.get(ApiSettings.noWorker) ? "api" : "serve")
  )

/** `serve`'s settings in force, from its flags, the environment and the config file. */
export const settings = CliOptions.resolvedOf(Catalog.serve, roleOf)

/** The options of `serve` from its settings in force. */
export const optionsOf = (settings: Resolve.Resolved) =>
  Effect.gen(function*() {
    const get = settings.get
    const media = yield* MediaStorage.fromSettings(SharedSettings.mediaOf(settings))
    const options: ServeOptions = {
      port: get(ApiSettings.port),
      host: get(ApiSettings.host),
      dataDir: get(StoreSettings.data),
      database: yield* Database.fromSettings(settings),
      worker: settings.role !== "api",
      name: get(ProcessSettings.name),
      console: !get(ApiSettings.noConsole),
      appsDir: get(ApiSettings.apps) ?? Bootstrap.defaultAppsDir,
      rateLimit: get(ApiSettings.rateLimit),
      trustProxy: get(ApiSettings.trustProxy),
      maxStreamsPerKey: get(ApiSettings.maxStreamsPerKey),
      mediaBaseUrl: get(SharedSettings.mediaBaseUrl),
      media,
      publicUrl: get(SharedSettings.publicUrl),
      adminPort: get(SharedSettings.adminPort),
      adminHost: get(SharedSettings.adminHost),
      adminActions: get(SharedSettings.adminActions),
      adminAllowedHosts: get(SharedSettings.adminAllowedHosts),
      maxUploadBytes: get(ApiSettings.maxUpload),
      stopDelay: get(ApiSettings.stopDelay),
      connections: {
        maxConnections: get(ApiSettings.maxConnections),
        maxConnectionsPerIp: get(ApiSettings.maxConnectionsPerIp),
        headersTimeout: get(ApiSettings.headersTimeout),
        requestTimeout: get(ApiSettings.requestTimeout),
        keepAliveTimeout: get(ApiSettings.keepAliveTimeout)
      },
      ...(yield* WorkerCommand.workOf(settings))
    }
    return options
  })

/** `appexec serve`. */
export const serveCommand = Command.make(
  "serve",
  { settings },
  ({ settings }) => Effect.flatMap(optionsOf(settings), serve)
).pipe(Command.withDescription("Run the appexec service (HTTP, worker and webhooks) on SQLite or PostgreSQL"))
