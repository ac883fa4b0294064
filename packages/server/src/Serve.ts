/**
 * `appexec serve`: the standalone service, on SQLite or on PostgreSQL (`--database`). It serves
 * HTTP and, unless `--no-worker`, runs a worker and the webhook dispatcher too; on PostgreSQL
 * the rate limit counts in the database, shared by every API process. On the first start (no `default` workspace
 * in the database yet) it bootstraps (see `Bootstrap`) and prints the base URL, the key (once)
 * and a curl line. It serves the console at `/console` unless told not to (`--no-console`).
 * Requests that arrive while it starts wait and are answered once it can (or 503 with
 * `Retry-After` if it cannot start; see `StartGate`). It logs one line per request and
 * per execution transition, and on SIGINT/SIGTERM it closes the listener (requests in flight
 * finish), drains the worker, stops the webhook dispatcher, closes storage and exits.
 */
import { Appexec, RateLimitStore, type SigningKeys } from "@appexec/core"
import { AdminHttp, AppexecHttp } from "@appexec/http"
import { NodeListener, StartGate } from "@appexec/platform-node"
import { Console, Duration, Effect, Layer, Option } from "effect"
import { createServer, type Server } from "node:http"
import type { AddressInfo } from "node:net"
import * as Bootstrap from "./Bootstrap.js"
import * as Database from "./Database.js"
import * as ExecutionLog from "./ExecutionLog.js"
import * as Instance from "./Instance.js"
import * as MediaSigning from "./MediaSigning.js"
import * as MediaStorage from "./MediaStorage.js"
import * as ProviderApps from "./ProviderApps.js"

/** The settings of `serve` (docs/cli.md). */
export interface ServeOptions {
  readonly port: number
  readonly host: string
  readonly dataDir: string
  /** PostgreSQL instead of SQLite under `dataDir`. */
  readonly database?: Database.Database
  /** Run a worker and the webhook dispatcher in this process too (default true; `--no-worker`: HTTP only). */
  readonly worker?: boolean
  /** Serve the console at `/console`, where `GET /` then leads (default true; `--no-console`: not). */
  readonly console?: boolean
  readonly appsDir: string
  readonly allowPrivateNetworks: boolean
  readonly rateLimit: number
  /** Proxies in front that append to `X-Forwarded-For` and are trusted (0: none). */
  readonly trustProxy: number
  readonly webhookRetryDelays: ReadonlyArray<Duration.DurationInput>
  /** Most executions of one workspace running at once (default: no cap). */
  readonly maxRunningPerWorkspace?: number | undefined
  /** Most event streams one API key may hold open at once (default: the core default, 100). */
  readonly maxStreamsPerKey?: number | undefined
  /** How long a rotated-out signing key stays published (default: the core default, 7 days). */
  readonly signingKeyGrace?: Duration.DurationInput | undefined
  /** The webhook signing key given by the operator; generated and stored when absent. */
  readonly signingKeyJwk?: SigningKeys.PrivateJwk | undefined
  /** Public base URL of produced media (CDN, object storage); absent: signed URLs served at `/media/…`. */
  readonly mediaBaseUrl?: string | undefined
  /** The URL clients reach this server at; absent: the listening address. */
  readonly publicUrl?: string | undefined
  /** Produced media in an S3-compatible bucket (`--media s3://…`); absent: the data directory or the database. */
  readonly media?: MediaStorage.S3Media | undefined
  /**
   * Port of the admin listener on `host` (Prometheus `/metrics`, `/healthz`, and the operator
   * views at `/console` with their endpoints under `/operator`); absent: none.
   */
  readonly adminPort?: number | undefined
  /** Let the operator views act (redeliver webhooks); read-only when absent or false. */
  readonly adminActions?: boolean | undefined
  /** More `Host` names the operator views answer besides the admin port's address and localhost (`AdminHttp.OperatorOptions.allowedHosts`). */
  readonly adminAllowedHosts?: ReadonlyArray<string> | undefined
  /** How long finished executions are kept (default: the core default, 30 days). */
  readonly retention?: Duration.DurationInput | undefined
  /** Largest upload (`POST /v1/uploads`) in bytes (default 25 MiB, `Api.DEFAULT_MAX_UPLOAD_BYTES`). */
  readonly maxUploadBytes?: number | undefined
  /** Where spans go; absent: OTLP when `OTEL_EXPORTER_OTLP_ENDPOINT` is set, else nowhere. */
  readonly tracing?: Layer.Layer<never> | undefined
  /** How long claims last (absent: the core defaults). */
  readonly claims?: Claims | undefined
  /** Connection limits and timeouts (absent ones: `NodeListener.connectionDefaults`). */
  readonly connections?: NodeListener.ConnectionOptions | undefined
}

/**
 * How long claims last (docs/cli.md): a worker's on an execution (renewed every third of it), the
 * claims an execution may use up, a dispatcher's on a delivery beyond the webhook timeout.
 */
export interface Claims {
  readonly lease: Duration.DurationInput
  readonly maxAttempts: number
  readonly webhookTimeout: Duration.DurationInput
  readonly webhookClaimMargin: Duration.DurationInput
}

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
    webhookClaimMargin: claims.webhookClaimMargin
  }
}

/** The base URL a client on this machine uses. */
export const baseUrlOf = (host: string, port: number) => {
  const reachable = host === "0.0.0.0" || host === "::" || host === "" ? "127.0.0.1" : host
  return `http://${reachable.includes(":") ? `[${reachable}]` : reachable}:${port}`
}

/**
 * OTLP export when `OTEL_EXPORTER_OTLP_ENDPOINT` is set (`Tracing.fromEnv`). The OpenTelemetry SDK
 * is loaded only then: the command does not pay for it at every start.
 */
const tracingFromEnv: Layer.Layer<never> = Layer.unwrapEffect(
  process.env.OTEL_EXPORTER_OTLP_ENDPOINT === undefined || process.env.OTEL_EXPORTER_OTLP_ENDPOINT.trim() === ""
    ? Effect.succeed(Layer.empty)
    : Effect.promise(() => import("./Tracing.js")).pipe(Effect.map((tracing) => tracing.fromEnv(process.env)))
)

/** How long shutdown waits for in-flight requests before closing their connections. */
const requestDrainTimeout = "5 seconds"

/**
 * Closes the listener: new connections are refused at once, idle keep-alive connections are
 * closed, and requests in flight may finish (up to `requestDrainTimeout`, then their connections
 * are closed too).
 */
const stopListening = (server: Server) =>
  Effect.async<void>((resume) => {
    // The callback also comes, with an error, when the server is not listening: nothing to wait for.
    server.close(() => resume(Effect.void))
    server.closeIdleConnections()
  }).pipe(
    // Shutdown runs in finalizers, which are uninterruptible: without this the timeout could not end the wait.
    Effect.interruptible,
    Effect.timeoutOption(requestDrainTimeout),
    Effect.ensuring(Effect.sync(() => server.closeAllConnections()))
  )

/** Listens on `port` (0: any free port) and `host`; the port bound. The server is closed with the scope. */
export const listen = (server: Server, port: number, host: string) =>
  Effect.acquireRelease(
    Effect.async<number, Error>((resume) => {
      const onError = (error: Error) => resume(Effect.fail(error))
      server.once("error", onError)
      server.listen(port, host, () => {
        server.off("error", onError)
        resume(Effect.succeed((server.address() as AddressInfo).port))
      })
    }),
    () =>
      Effect.async<void>((resume) => {
        server.closeAllConnections()
        server.close(() => resume(Effect.void))
      })
  )

/**
 * Serves until interrupted. Shutdown runs in the reverse order of start: the listener closes
 * first (`stopListening`), then the instance stops — the worker drains and releases what it could
 * not finish, the webhook dispatcher stops, storage closes.
 */
export const serve = (options: ServeOptions) =>
  Effect.gen(function*() {
    const database = options.database ?? Database.sqlite
    const worker = options.worker ?? true
    yield* Effect.sync(() => Instance.prepareDataDir(options.dataDir))
    // Listen first: the media URLs an execution hands out need the address, also with port 0.
    // Requests that arrive before the app is built wait behind the gate and are answered once it
    // opens, or 503 with Retry-After if start-up fails (docs/operations.md#start-up).
    const gate = StartGate.make()
    const nodeServer = NodeListener.createServer(options.connections).on("request", gate.listener)
    const port = yield* listen(nodeServer, options.port, options.host)
    // Runs before the server closes: the 503s go out before the connections are closed.
    yield* Effect.addFinalizer(() =>
      Effect.sync(() => gate.close()).pipe(
        Effect.zipRight(Effect.async<void>((resume) => void setImmediate(() => resume(Effect.void))))
      )
    )
    const localUrl = baseUrlOf(options.host, port)
    const baseUrl = options.publicUrl ?? localUrl

    // Runs inside the instance and in a scope of its own, which closes before the instance's:
    // requests stop before the worker, the dispatcher and SQLite do.
    const program = Effect.gen(function*() {
      const first = yield* Bootstrap.runOnce(options.appsDir)
      // At every start: the provider example apps whose secrets are set and that are absent.
      const providerApps = yield* ProviderApps.importReady(options.appsDir).pipe(
        Effect.catchAll((error) =>
          Effect.logWarning("the provider example apps could not be checked", error).pipe(Effect.as([]))
        )
      )
      yield* ExecutionLog.run
      // The API and, beside /v1, the signed media URLs of the instance (`MediaRoute`). On SQLite
      // the rate limit counts in this process's memory: no write per request (docs/http.md); on
      // PostgreSQL in the database, one limit for every API process.
      const app = yield* AppexecHttp.make({
        rateLimit: { limit: options.rateLimit, trustProxy: options.trustProxy },
        ...(options.maxUploadBytes === undefined ? {} : { maxUploadBytes: options.maxUploadBytes }),
        console: options.console ?? true
      }).pipe(Effect.provide(Database.isPostgres(database) ? Layer.empty : RateLimitStore.layerMemory()))
      gate.open(NodeListener.fromApp(app))
      yield* Effect.addFinalizer(() => Effect.sync(() => gate.close()))
      const appexec = yield* Appexec.Appexec
      // Added after the listener's, so it runs first: requests in flight finish with the app.
      yield* Effect.addFinalizer(() =>
        Effect.logInfo("stopping: stopped accepting requests; waiting for requests in flight").pipe(
          Effect.zipRight(appexec.operator.drain),
          Effect.zipRight(stopListening(nodeServer)),
          Effect.zipRight(Effect.logInfo("stopping: requests done; draining the worker"))
        )
      )
      yield* Console.log(
        `appexec is listening on ${localUrl} ${
          options.publicUrl === undefined ? "" : `(public URL ${options.publicUrl}) `
        }(${Database.isPostgres(database) ? "database" : "data"}: ${
          Database.isPostgres(database) ? Database.describe(database, "") : options.dataDir
        })${worker ? "" : " with no worker"}`
      )
      if (options.console ?? true) yield* Console.log(`Console: ${baseUrl}/console (sign in with an API key)`)
      yield* MediaStorage.announce(options.media)
      if (options.adminPort !== undefined) {
        const adminServer = createServer()
        const admin = yield* AdminHttp.withOperator({
          actions: options.adminActions ?? false,
          console: options.console ?? true,
          bound: () => {
            const address = adminServer.address()
            return address === null || typeof address === "string" ? undefined : address
          },
          allowedHosts: options.adminAllowedHosts
        })
        adminServer.on("request", NodeListener.fromApp(admin))
        const adminPort = yield* listen(adminServer, options.adminPort, options.host)
        const adminUrl = baseUrlOf(options.host, adminPort)
        yield* Console.log(`Metrics: ${adminUrl}/metrics`)
        if (options.console ?? true) {
          yield* Console.log(
            `Operator views: ${adminUrl}/console (no key: keep this port private${
              options.adminActions === true ? "; actions allowed" : "; read-only"
            })`
          )
        }
      }
      if (Option.isSome(first)) {
        const { key, apps } = first.value
        yield* Console.log(`Imported ${apps.length} public app(s): ${apps.map((a) => a.name).join(", ") || "none"}.`)
        yield* Console.log(`API key of workspace "default" (shown once, keep it): ${key}`)
        yield* Console.log(`Try it:\n  curl -H 'x-api-key: ${key}' ${baseUrl}/v1/apps`)
      }
      const aboutProviderApps = ProviderApps.describe(providerApps)
      if (Option.isSome(aboutProviderApps)) yield* Console.log(aboutProviderApps.value)
      if (Option.isNone(first)) {
        yield* Console.log(
          `Create an API key with: appexec keys create --workspace default ${
            Database.isPostgres(database) ? "--database <URL>" : `--data ${options.dataDir}`
          }`
        )
      }
      return yield* Effect.never
    }).pipe(Effect.scoped)
    return yield* program.pipe(
      Effect.provide(
        Instance.layer({
          dataDir: options.dataDir,
          database,
          background: worker,
          mediaUrls: MediaSigning.urlsLayer({ baseUrl, publicBaseUrl: options.mediaBaseUrl }),
          media: options.media,
          allowPrivateNetworks: options.allowPrivateNetworks,
          config: {
            ...(options.claims === undefined ? {} : claimSettings(options.claims)),
            webhookRetryDelays: options.webhookRetryDelays,
            ...(options.retention === undefined ? {} : { retention: options.retention }),
            ...(options.maxRunningPerWorkspace === undefined
              ? {}
              : { maxRunningPerWorkspace: options.maxRunningPerWorkspace }),
            ...(options.maxStreamsPerKey === undefined ? {} : { maxStreamsPerKey: options.maxStreamsPerKey }),
            ...(options.signingKeyGrace === undefined ? {} : { signingKeyGrace: options.signingKeyGrace }),
            ...(options.signingKeyJwk === undefined ? {} : { signingKeyJwk: options.signingKeyJwk })
          }
        })
      ),
      Effect.provide(options.tracing ?? tracingFromEnv),
      Effect.ensuring(Effect.logInfo("stopped"))
    )
  }).pipe(Effect.scoped)
