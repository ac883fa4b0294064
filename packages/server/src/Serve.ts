/**
 * `appexec serve`: the standalone service, on SQLite or on PostgreSQL (`--database`). It serves
 * HTTP and, unless `--no-worker`, runs a worker and the webhook dispatcher too; on PostgreSQL
 * the rate limit counts in the database, shared by every API process. On the first start (no `default` workspace
 * in the database yet) it bootstraps (see `Bootstrap`) and prints the key (once) and a curl line
 * on stdout; its start-up lines (the address, the console, the admin port, …) are log lines. It serves the console at `/console` unless told not to (`--no-console`).
 * Requests that arrive while it starts wait and are answered once it can (or 503 with
 * `Retry-After` if it cannot start; see `StartGate`). It logs one line per request and
 * per execution transition, and on SIGINT/SIGTERM it answers `/readyz` 503, serves on for the
 * pre-stop delay (`stopDelay`), ends the event streams with a `reconnect` event, closes the
 * listener (requests in flight finish), drains the worker (with a countdown; what does not end is handed back to run again),
 * stops the webhook dispatcher, closes storage and exits; a second signal stops at once
 * (`StopSignals`). The temporary work directories a killed process left are removed as it starts.
 */
import { Appexec, RateLimitStore, Shutdown } from "@appexec/core"
import { AdminHttp, AppexecHttp } from "@appexec/http"
import { NodeListener, StartGate } from "@appexec/platform-node"
import { Console, Duration, Effect, Fiber, Layer, Option } from "effect"
import { createServer, type Server } from "node:http"
import type { AddressInfo } from "node:net"
import * as Bootstrap from "./Bootstrap.js"
import * as ComfyuiApps from "./ComfyuiApps.js"
import * as Database from "./Database.js"
import * as ExecutionLog from "./ExecutionLog.js"
import * as Instance from "./Instance.js"
import * as StopSignals from "./internal/StopSignals.js"
import * as MediaSigning from "./MediaSigning.js"
import * as MediaStorage from "./MediaStorage.js"
import * as ProcessName from "./ProcessName.js"
import * as ProviderApps from "./ProviderApps.js"
import * as StderrLogger from "./StderrLogger.js"
import type * as Work from "./Work.js"

/**
 * The settings of `serve` (docs/cli.md): where it listens and what it serves, and the settings of
 * the work it runs (`Work`; with `worker: false` only those the API uses: the signing key's, the
 * outbound address policy).
 */
export interface ServeOptions extends Work.Work {
  readonly port: number
  readonly host: string
  readonly dataDir: string
  /** PostgreSQL instead of SQLite under `dataDir`. */
  readonly database?: Database.Database
  /** Run a worker and the webhook dispatcher in this process too (default true; `--no-worker`: HTTP only). */
  readonly worker?: boolean
  /** The process's name (`--name`); `host:pid` when absent. */
  readonly name?: string | undefined
  /** Serve the console at `/console`, where `GET /` then leads (default true; `--no-console`: not). */
  readonly console?: boolean
  readonly appsDir: string
  readonly rateLimit: number
  /** Proxies in front that append to `X-Forwarded-For` and are trusted (0: none). */
  readonly trustProxy: number
  /** Most event streams one API key may hold open at once (default: the core default, 100). */
  readonly maxStreamsPerKey?: number | undefined
  /** Public base URL of produced media (CDN, object storage); absent: signed URLs served at `/media/…`. */
  readonly mediaBaseUrl?: string | undefined
  /** The URL clients reach this server at; absent: the listening address. */
  readonly publicUrl?: string | undefined
  /** Produced media in an S3-compatible bucket (`--media s3://…`); absent: the data directory or the database. */
  readonly media?: MediaStorage.S3Media | undefined
  /**
   * Port of the admin listener on `adminHost` (Prometheus `/metrics`, `/healthz`, and the operator
   * views at `/console` with their endpoints under `/operator`); absent: none.
   */
  readonly adminPort?: number | undefined
  /** The address of the admin listener, whatever `host` is (default 127.0.0.1). */
  readonly adminHost?: string | undefined
  /** Let the operator views act (redeliver webhooks); read-only when absent or false. */
  readonly adminActions?: boolean | undefined
  /** More `Host` names the operator views answer besides the admin port's address and localhost (`AdminHttp.OperatorOptions.allowedHosts`). */
  readonly adminAllowedHosts?: ReadonlyArray<string> | undefined
  /** Largest upload (`POST /v1/uploads`) in bytes (default 25 MiB, `Api.DEFAULT_MAX_UPLOAD_BYTES`). */
  readonly maxUploadBytes?: number | undefined
  /** Where spans go; absent: OTLP when `OTEL_EXPORTER_OTLP_ENDPOINT` is set, else nowhere. */
  readonly tracing?: Layer.Layer<never> | undefined
  /** Connection limits and timeouts (absent ones: `NodeListener.connectionDefaults`). */
  readonly connections?: NodeListener.ConnectionOptions | undefined
  /**
   * On a stop signal, how long `/readyz` answers 503 while the listener still serves, before it
   * closes (default none: `--stop-delay`, docs/operations.md#stopping).
   */
  readonly stopDelay?: Duration.DurationInput | undefined
}

/** The address of an admin port when none is given: loopback, whatever the main port's. */
export const defaultAdminHost = "127.0.0.1"

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

/** What a second stop signal does, said as the stop begins. */
export const AGAIN =
  "press Ctrl-C again (or send SIGTERM again) to stop at once: what still runs is handed back and runs again on the next start"

/** How long shutdown waits for in-flight requests before closing their connections. */
const requestDrainTimeout = "5 seconds"

/**
 * Waits for `wait`, or until the stop is hurried. Interruptible in a fiber of its own: shutdown
 * runs in finalizers (uninterruptible, which a timeout or a race could not cut short), of the
 * command's fiber, which a stop signal has interrupted (an interruptible wait there would end at
 * once).
 */
const untilHurried = (wait: Effect.Effect<void>, hurried: Effect.Effect<void>) =>
  wait.pipe(Effect.raceFirst(hurried), Effect.interruptible, Effect.forkDaemon, Effect.flatMap(Fiber.join))

/**
 * Closes the listener: new connections are refused at once, idle keep-alive connections are
 * closed, and requests in flight may finish (up to `requestDrainTimeout`, or until the stop is
 * hurried, then their connections are closed too).
 */
const stopListening = (server: Server, hurried: Effect.Effect<void>) =>
  untilHurried(
    Effect.async<void>((resume) => {
      // The callback also comes, with an error, when the server is not listening: nothing to wait for.
      server.close(() => resume(Effect.void))
      server.closeIdleConnections()
    }).pipe(Effect.timeoutOption(requestDrainTimeout), Effect.asVoid),
    hurried
  ).pipe(Effect.ensuring(Effect.sync(() => server.closeAllConnections())))

/**
 * The pre-stop delay (`--stop-delay`): `/readyz` answers 503 already, and the listener serves on
 * for `delay` (or until the stop is hurried), so that a load balancer sees the 503 and stops
 * sending before the listener closes.
 */
const stopDelay = (delay: Duration.Duration, hurried: Effect.Effect<void>) =>
  Duration.toMillis(delay) === 0 ? Effect.void : Effect.logInfo(
    `stopping: /readyz answers 503; serving requests for ${Duration.format(delay)} more before closing the listener`
  ).pipe(Effect.zipRight(untilHurried(Effect.sleep(delay), hurried)))

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
export const serve = (options: ServeOptions) => {
  const worker = options.worker ?? true
  const identity = ProcessName.identityOf(options.name, worker ? "serve" : "api")
  return Effect.gen(function*() {
    const database = options.database ?? Database.sqlite
    // Before anything else, and released last: a second stop signal hurries the whole stop.
    const signals = yield* StopSignals.make
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
      // With ComfyUI servers (--comfyui): the ComfyUI example apps that are absent.
      const comfyuiApps = (options.comfyui ?? []).length === 0
        ? []
        : yield* ComfyuiApps.importAbsent(options.appsDir).pipe(
          Effect.catchAll((error) =>
            Effect.logWarning("the ComfyUI example apps could not be imported", error).pipe(Effect.as([]))
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
      const shutdown = yield* Shutdown.Shutdown
      signals.hurries(shutdown)
      // Added after the listener's, so it runs first: requests in flight finish with the app.
      // `/readyz` turns 503, the listener serves on for the pre-stop delay, the event streams are
      // told to reconnect elsewhere, and the listener closes.
      yield* Effect.addFinalizer(() =>
        appexec.operator.drain.pipe(
          Effect.zipRight(stopDelay(Duration.decode(options.stopDelay ?? Duration.zero), shutdown.hurried)),
          Effect.zipRight(app.endStreams),
          Effect.zipRight(Effect.logInfo(
            `stopping: stopped accepting requests; waiting for requests in flight${
              worker ? ", then for running executions" : ""
            } (${AGAIN})`
          )),
          Effect.zipRight(stopListening(nodeServer, shutdown.hurried)),
          Effect.zipRight(
            Effect.logInfo(worker ? "stopping: requests done; draining the worker" : "stopping: requests done")
          )
        )
      )
      yield* Effect.logInfo(
        `appexec is listening on ${localUrl} ${
          options.publicUrl === undefined ? "" : `(public URL ${options.publicUrl}) `
        }(${Database.isPostgres(database) ? "database" : "data"}: ${
          Database.isPostgres(database) ? Database.describe(database, "") : options.dataDir
        })${worker ? "" : " with no worker"}`
      ).pipe(Effect.annotateLogs("url", localUrl))
      if (options.console ?? true) {
        yield* Effect.logInfo(`Console: ${baseUrl}/console (sign in with an API key)`).pipe(
          Effect.annotateLogs("url", `${baseUrl}/console`)
        )
      }
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
        const adminHost = options.adminHost ?? defaultAdminHost
        const adminPort = yield* listen(adminServer, options.adminPort, adminHost)
        const adminUrl = baseUrlOf(adminHost, adminPort)
        yield* Effect.logInfo(`Metrics: ${adminUrl}/metrics`).pipe(Effect.annotateLogs("url", `${adminUrl}/metrics`))
        if (options.console ?? true) {
          yield* Effect.logInfo(
            `Operator views: ${adminUrl}/console (no key: keep this port private${
              options.adminActions === true ? "; actions allowed" : "; read-only"
            })`
          ).pipe(Effect.annotateLogs("url", `${adminUrl}/console`))
        }
      }
      if (Option.isSome(first)) {
        const { apps } = first.value
        yield* Effect.logInfo(
          `Imported ${apps.length} public app(s): ${apps.map((a) => a.name).join(", ") || "none"}.`
        )
      }
      const aboutProviderApps = ProviderApps.describe(providerApps)
      if (Option.isSome(aboutProviderApps)) {
        for (const line of aboutProviderApps.value.split("\n")) yield* Effect.logInfo(line)
      }
      if (comfyuiApps.length > 0) yield* Effect.logInfo(`Imported ComfyUI example app(s): ${comfyuiApps.join(", ")}.`)
      if (Option.isSome(first)) {
        // The command's own output for the person who started it, on stdout and never in the log
        // (a shipped log must not hold a key), once the log lines before it are out.
        const { key } = first.value
        yield* StderrLogger.linesWritten
        yield* Console.log(`API key of workspace "default" (shown once, keep it): ${key}`)
        yield* Console.log(`Try it:\n  curl -H 'x-api-key: ${key}' ${baseUrl}/v1/apps`)
      }
      if (Option.isNone(first)) {
        yield* Effect.logInfo(
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
          process: worker ? "appexec serve" : "appexec serve --no-worker",
          identity,
          mediaUrls: MediaSigning.urlsLayer({ baseUrl, publicBaseUrl: options.mediaBaseUrl }),
          media: options.media,
          work: options,
          config: options.maxStreamsPerKey === undefined ? {} : { maxStreamsPerKey: options.maxStreamsPerKey }
        })
      ),
      Effect.provide(options.tracing ?? tracingFromEnv),
      Effect.ensuring(Effect.logInfo("stopped"))
    )
  }).pipe(Effect.scoped, ProcessName.annotated(identity))
}
