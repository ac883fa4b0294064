/**
 * `appexec worker`: a process that runs executions and delivers webhooks, with no HTTP listener,
 * beside API processes (`appexec serve --no-worker`) on the same database. It takes work from the
 * shared queue (on PostgreSQL, woken by `LISTEN/NOTIFY` as soon as any process accepts an
 * execution), logs one line per execution transition, and on SIGINT/SIGTERM drains: running
 * executions get the drain time to finish, then are released for another worker to take.
 */
import type { SigningKeys } from "@appexec/core"
import { AdminHttp } from "@appexec/http"
import { NodeListener } from "@appexec/platform-node"
import { Console, type Duration, Effect } from "effect"
import { createServer } from "node:http"
import * as Database from "./Database.js"
import * as ExecutionLog from "./ExecutionLog.js"
import * as Instance from "./Instance.js"
import * as MediaSigning from "./MediaSigning.js"
import * as MediaStorage from "./MediaStorage.js"
import { baseUrlOf, type Claims, claimSettings, listen } from "./Serve.js"

/** The settings of `worker` (docs/cli.md). */
export interface WorkerOptions {
  readonly dataDir: string
  /** PostgreSQL instead of SQLite under `dataDir`. */
  readonly database: Database.Database
  /** Executions run at once. */
  readonly concurrency: number
  /** Executions of one workspace running at once across every worker on the database; no cap when absent. */
  readonly maxRunningPerWorkspace?: number | undefined
  /** How long claims last (as `serve`'s): the lease is renewed every third of it. */
  readonly claims: Claims
  readonly allowPrivateNetworks: boolean
  readonly webhookRetryDelays: ReadonlyArray<Duration.DurationInput>
  /** The URL clients reach the API at: the base of the signed media URLs this worker hands out. */
  readonly publicUrl: string
  /** Public base URL of produced media (CDN, object storage), instead of signed URLs. */
  readonly mediaBaseUrl?: string | undefined
  /** Produced media in an S3-compatible bucket (`--media s3://…`); absent: the data directory or the database. */
  readonly media?: MediaStorage.S3Media | undefined
  readonly signingKeyGrace?: Duration.DurationInput | undefined
  readonly signingKeyJwk?: SigningKeys.PrivateJwk | undefined
  /** Serve `/healthz` and Prometheus `/metrics` on this port of `host` (0: any free port); none when absent. */
  readonly adminPort?: number | undefined
  /** The interface of the admin port. */
  readonly host?: string | undefined
}

/** Works until interrupted, then drains. */
export const work = (options: WorkerOptions) =>
  Effect.gen(function*() {
    yield* ExecutionLog.run
    yield* Console.log(
      `appexec worker is running (${Database.isPostgres(options.database) ? "database" : "data"}: ${
        Database.describe(options.database, options.dataDir)
      })`
    )
    yield* MediaStorage.announce(options.media)
    if (options.adminPort !== undefined) {
      // The same admin app as `serve --admin-port`: an orchestrator's liveness probe and the
      // worker's own metrics (the gauges are read from the shared database).
      const host = options.host ?? "127.0.0.1"
      const adminServer = createServer(NodeListener.fromApp(yield* AdminHttp.make))
      const port = yield* listen(adminServer, options.adminPort, host)
      yield* Console.log(`Metrics: ${baseUrlOf(host, port)}/metrics (health: ${baseUrlOf(host, port)}/healthz)`)
    }
    return yield* Effect.never
  }).pipe(
    Effect.scoped,
    Effect.provide(
      Instance.layer({
        dataDir: options.dataDir,
        database: options.database,
        background: true,
        mediaUrls: MediaSigning.urlsLayer({ baseUrl: options.publicUrl, publicBaseUrl: options.mediaBaseUrl }),
        media: options.media,
        allowPrivateNetworks: options.allowPrivateNetworks,
        config: {
          workerConcurrency: options.concurrency,
          ...(options.maxRunningPerWorkspace === undefined
            ? {}
            : { maxRunningPerWorkspace: options.maxRunningPerWorkspace }),
          ...claimSettings(options.claims),
          webhookRetryDelays: options.webhookRetryDelays,
          ...(options.signingKeyGrace === undefined ? {} : { signingKeyGrace: options.signingKeyGrace }),
          ...(options.signingKeyJwk === undefined ? {} : { signingKeyJwk: options.signingKeyJwk })
        }
      })
    ),
    Effect.ensuring(Effect.logInfo("stopped"))
  )
