/**
 * `appexec serve` (docs/cli.md): its flags and the command. The flags it shares with `worker`
 * are `SharedFlags`; those only `serve` has — where it listens, the apps of the first start, the
 * rate limit, connection limits, retention — take their defaults from the modules that own them.
 */
import { Api } from "@appexec/api"
import { AppexecConfig } from "@appexec/core"
import { RateLimit } from "@appexec/http"
import { NodeListener } from "@appexec/platform-node"
import { Command, Options } from "@effect/cli"
import { Config, Effect, Option } from "effect"
import { resolve } from "node:path"
import { fileURLToPath } from "node:url"
import * as Flags from "./internal/Flags.js"
import * as SharedFlags from "./internal/SharedFlags.js"
import * as MediaStorage from "./MediaStorage.js"
import { serve } from "./Serve.js"

/** The example apps shipped with this package (`apps/`), imported on the first start when `--apps` is not given. */
export const defaultAppsDir = fileURLToPath(new URL("../apps", import.meta.url))

/** The port `serve` listens on when `--port` is not given. */
export const defaultPort = 8080

const connections = NodeListener.connectionDefaults

/** The flags of `serve`, by the name its handler reads them. */
export const flags = {
  port: Options.integer("port").pipe(
    Options.withPseudoName("N"),
    Options.withDescription(`Port to listen on, 0 picks a free one (default ${defaultPort})`),
    Options.withFallbackConfig(Config.integer("APPEXEC_PORT")),
    Options.withDefault(defaultPort)
  ),
  host: SharedFlags.host,
  data: SharedFlags.data,
  database: SharedFlags.database,
  noWorker: Flags.toggle({
    name: "no-worker",
    variable: "APPEXEC_NO_WORKER",
    description: "Serve HTTP only: executions run in `appexec worker` processes on the same database"
  }),
  noConsole: Flags.toggle({
    name: "no-console",
    variable: "APPEXEC_NO_CONSOLE",
    description: "Do not serve the console at /console (GET / then leads to /docs)"
  }),
  apps: Options.directory("apps").pipe(
    Options.withPseudoName("DIR"),
    Options.withDescription(
      "Directory of app definitions (*.json) imported as public apps on the first start (default: the example apps)"
    ),
    Options.withFallbackConfig(Config.string("APPEXEC_APPS")),
    Options.withDefault(defaultAppsDir),
    Options.map((dir) => resolve(dir))
  ),
  allowPrivateNetworks: SharedFlags.allowPrivateNetworks,
  rateLimit: Flags.count({
    name: "rate-limit",
    variable: "APPEXEC_RATE_LIMIT",
    description: "Requests per minute per client IP on /v1"
  }, RateLimit.defaults.limit),
  trustProxy: Options.text("trust-proxy").pipe(
    Options.withPseudoName("N"),
    Options.withDescription(
      "A number: the proxies in front that append to X-Forwarded-For and that you trust (1 behind one load " +
        `balancer); the client IP is the entry that many hops back (default ${RateLimit.defaults.trustProxy})`
    ),
    Options.withFallbackConfig(Config.string("APPEXEC_TRUST_PROXY")),
    // Read as text, so that a bare `--trust-proxy` followed by another flag is named as such.
    Options.mapEffect((text) =>
      /^\s*\d+\s*$/.test(text)
        ? Effect.succeed(Number(text))
        : Flags.refuse("trust-proxy", `give the number of proxies you trust, as in --trust-proxy 1 (got '${text}')`)
    ),
    Options.withDefault(RateLimit.defaults.trustProxy)
  ),
  maxRunningPerWorkspace: SharedFlags.maxRunningPerWorkspace,
  maxStreamsPerKey: Flags.count({
    name: "max-streams-per-key",
    variable: "APPEXEC_MAX_STREAMS_PER_KEY",
    description: "Event streams (GET /v1/executions/{id}/events) one API key may hold open at once"
  }, AppexecConfig.defaults.maxStreamsPerKey),
  webhookRetryDelays: SharedFlags.webhookRetryDelays,
  mediaBaseUrl: SharedFlags.mediaBaseUrl,
  media: MediaStorage.location,
  mediaEndpoint: MediaStorage.endpoint,
  mediaDirect: MediaStorage.direct,
  publicUrl: SharedFlags.publicUrl,
  signingKeyGrace: SharedFlags.signingKeyGrace,
  signingKeyJwk: SharedFlags.signingKeyJwk,
  adminPort: SharedFlags.adminPort,
  adminActions: Flags.toggle({
    name: "admin-actions",
    variable: "APPEXEC_ADMIN_ACTIONS",
    description: "Let the operator views of --admin-port act (redeliver failed webhooks); read-only without it"
  }),
  adminAllowedHosts: Options.text("admin-allowed-hosts").pipe(
    Options.withPseudoName("NAMES"),
    Options.withDescription(
      "Host names (comma-separated; name or name:port) the operator views of --admin-port also answer, besides its address and localhost"
    ),
    Options.withFallbackConfig(Config.string("APPEXEC_ADMIN_ALLOWED_HOSTS")),
    Options.optional
  ),
  retention: SharedFlags.retention(
    "Delete finished executions (with their webhook deliveries and media) this long after they end"
  ),
  maxUpload: Flags.byteSize({
    name: "max-upload",
    variable: "APPEXEC_MAX_UPLOAD",
    description: "Largest file POST /v1/uploads accepts, in bytes or KiB, MiB, GiB"
  }, Api.DEFAULT_MAX_UPLOAD_BYTES),
  maxConnections: Flags.count({
    name: "max-connections",
    variable: "APPEXEC_MAX_CONNECTIONS",
    description: "Open connections in all"
  }, connections.maxConnections),
  maxConnectionsPerIp: Flags.count({
    name: "max-connections-per-ip",
    variable: "APPEXEC_MAX_CONNECTIONS_PER_IP",
    description: "Open connections per client address (raise it behind a proxy)"
  }, connections.maxConnectionsPerIp),
  headersTimeout: Flags.duration(
    {
      name: "headers-timeout",
      variable: "APPEXEC_HEADERS_TIMEOUT",
      description: "Time to send request headers"
    },
    connections.headersTimeout,
    { positive: true }
  ),
  requestTimeout: Flags.duration(
    {
      name: "request-timeout",
      variable: "APPEXEC_REQUEST_TIMEOUT",
      description: "Time to send a whole request"
    },
    connections.requestTimeout,
    { positive: true }
  ),
  keepAliveTimeout: Flags.duration(
    {
      name: "keep-alive-timeout",
      variable: "APPEXEC_KEEP_ALIVE_TIMEOUT",
      description: "How long an idle keep-alive connection stays open"
    },
    connections.keepAliveTimeout,
    { positive: true }
  ),
  ...SharedFlags.claims
}

/** `appexec serve`. */
export const serveCommand = Command.make(
  "serve",
  flags,
  (o) =>
    Effect.flatMap(MediaStorage.fromFlags(o), (media) =>
      serve({
        port: o.port,
        host: o.host,
        dataDir: o.data,
        database: o.database,
        worker: !o.noWorker,
        console: !o.noConsole,
        appsDir: o.apps,
        allowPrivateNetworks: o.allowPrivateNetworks,
        rateLimit: o.rateLimit,
        trustProxy: o.trustProxy,
        maxRunningPerWorkspace: Option.getOrUndefined(o.maxRunningPerWorkspace),
        maxStreamsPerKey: o.maxStreamsPerKey,
        webhookRetryDelays: o.webhookRetryDelays,
        mediaBaseUrl: Option.getOrUndefined(o.mediaBaseUrl),
        media,
        publicUrl: Option.getOrUndefined(o.publicUrl),
        signingKeyGrace: o.signingKeyGrace,
        signingKeyJwk: Option.getOrUndefined(o.signingKeyJwk),
        adminPort: Option.getOrUndefined(o.adminPort),
        adminActions: o.adminActions,
        adminAllowedHosts: Option.match(o.adminAllowedHosts, {
          onNone: () => [],
          // Trimmed, and empty names dropped, by the listener (`AdminHost.allowedSet`).
          onSome: (names) => names.split(",")
        }),
        retention: o.retention,
        maxUploadBytes: o.maxUpload,
        claims: SharedFlags.claimsOf(o),
        connections: {
          maxConnections: o.maxConnections,
          maxConnectionsPerIp: o.maxConnectionsPerIp,
          headersTimeout: o.headersTimeout,
          requestTimeout: o.requestTimeout,
          keepAliveTimeout: o.keepAliveTimeout
        }
      }))
).pipe(Command.withDescription("Run the appexec service (HTTP, worker and webhooks) on SQLite or PostgreSQL"))
