/**
 * `appexec worker`: a process that runs executions and delivers webhooks, with no HTTP listener,
 * beside API processes (`appexec serve --no-worker`) on the same database. It takes work from the
 * shared queue (on PostgreSQL, woken by `LISTEN/NOTIFY` as soon as any process accepts an
 * execution), logs one line per execution transition, and on SIGINT/SIGTERM drains: running
 * executions get the drain time to finish (with a countdown), then are handed back for another
 * worker, or the next start, to run again; a second signal stops at once (`StopSignals`). The
 * temporary work directories a killed process left are removed as it starts.
 */
import { Appexec, type ProcessIdentity, Shutdown } from "@appexec/core"
import { AdminHttp } from "@appexec/http"
import { NodeListener } from "@appexec/platform-node"
import { Effect } from "effect"
import { createServer } from "node:http"
import * as Database from "./Database.js"
import * as ExecutionLog from "./ExecutionLog.js"
import * as Instance from "./Instance.js"
import * as StopSignals from "./internal/StopSignals.js"
import * as MediaSigning from "./MediaSigning.js"
import * as MediaStorage from "./MediaStorage.js"
import * as ProcessName from "./ProcessName.js"
import { AGAIN, baseUrlOf, defaultAdminHost, listen } from "./Serve.js"
import type * as Work from "./Work.js"

/** The settings of `worker` (docs/cli.md): the database, the work (`Work`), media URLs, the admin port. */
export interface WorkerOptions extends Work.Work {
  readonly dataDir: string
  /** PostgreSQL instead of SQLite under `dataDir`. */
  readonly database: Database.Database
  /** The URL clients reach the API at: the base of the signed media URLs this worker hands out. */
  readonly publicUrl: string
  /** Public base URL of produced media (CDN, object storage), instead of signed URLs. */
  readonly mediaBaseUrl?: string | undefined
  /** Produced media in an S3-compatible bucket (`--media s3://…`); absent: the data directory or the database. */
  readonly media?: MediaStorage.S3Media | undefined
  /**
   * Serve `/healthz`, `/readyz` (503 while the database does not answer or the worker stops) and
   * Prometheus `/metrics` on this port of `adminHost` (0: any free port); none when absent.
   */
  readonly adminPort?: number | undefined
  /** The interface of the admin port (default 127.0.0.1). */
  readonly adminHost?: string | undefined
  /** The process's name (`--name`); `host:pid` when absent. */
  readonly name?: string | undefined
}

/** Works until interrupted, then drains. */
export const work = (options: WorkerOptions) => {
  const identity = ProcessName.identityOf(options.name, "worker")
  return Effect.gen(function*() {
    // Released after the instance: a second stop signal hurries the whole stop.
    const signals = yield* StopSignals.make
    return yield* working(options, identity, signals)
  }).pipe(Effect.scoped, ProcessName.annotated(identity))
}

/** The worker process inside its instance. */
const working = (
  options: WorkerOptions,
  identity: ProcessIdentity.Options,
  signals: StopSignals.StopSignals
) =>
  Effect.gen(function*() {
    const appexec = yield* Appexec.Appexec
    signals.hurries(yield* Shutdown.Shutdown)
    yield* Effect.addFinalizer(() =>
      appexec.operator.drain.pipe(Effect.zipRight(Effect.logInfo(`stopping: draining the worker (${AGAIN})`)))
    )
    yield* ExecutionLog.run
    yield* Effect.logInfo(
      `appexec worker is running (${Database.isPostgres(options.database) ? "database" : "data"}: ${
        Database.describe(options.database, options.dataDir)
      }; public URL ${options.publicUrl})`
    )
    yield* MediaStorage.announce(options.media)
    if (options.adminPort !== undefined) {
      // The same admin app as `serve --admin-port`: an orchestrator's liveness and readiness
      // probes and the worker's own metrics. The gauges read from the shared database are the API
      // processes' to export (`scope="database"`): a sum over the fleet counts them once per API.
      const host = options.adminHost ?? defaultAdminHost
      const adminServer = createServer(NodeListener.fromApp(yield* AdminHttp.makeWith({ databaseGauges: false })))
      const url = baseUrlOf(host, yield* listen(adminServer, options.adminPort, host))
      yield* Effect.logInfo(`Metrics: ${url}/metrics (liveness: ${url}/healthz, readiness: ${url}/readyz)`).pipe(
        Effect.annotateLogs("url", `${url}/metrics`)
      )
    }
    return yield* Effect.never
  }).pipe(
    Effect.scoped,
    Effect.provide(
      Instance.layer({
        dataDir: options.dataDir,
        database: options.database,
        background: true,
        process: "appexec worker",
        identity,
        mediaUrls: MediaSigning.urlsLayer({ baseUrl: options.publicUrl, publicBaseUrl: options.mediaBaseUrl }),
        media: options.media,
        work: options
      })
    ),
    Effect.ensuring(Effect.logInfo("stopped"))
  )
