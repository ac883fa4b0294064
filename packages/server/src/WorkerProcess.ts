/**
 * `appexec worker`: a process that runs executions and delivers webhooks, with no HTTP listener,
 * beside API processes (`appexec serve --no-worker`) on the same database. It takes work from the
 * shared queue (on PostgreSQL, woken by `LISTEN/NOTIFY` as soon as any process accepts an
 * execution), logs one line per execution transition, and on SIGINT/SIGTERM drains: running
 * executions get the drain time to finish, then are released for another worker to take.
 */
import type { SigningKeys } from "@appexec/core"
import { Console, type Duration, Effect, Option } from "effect"
import * as Database from "./Database.js"
import * as ExecutionLog from "./ExecutionLog.js"
import * as Instance from "./Instance.js"
import * as MediaSigning from "./MediaSigning.js"
import type { ServeOptions } from "./Serve.js"

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
  readonly claims: ServeOptions["claims"] & {}
  readonly allowPrivateNetworks: boolean
  readonly webhookRetryDelays: ReadonlyArray<Duration.DurationInput>
  /** The URL clients reach the API at: the base of the signed media URLs this worker hands out. */
  readonly publicUrl: string
  /** Public base URL of produced media (CDN, object storage), instead of signed URLs. */
  readonly mediaBaseUrl?: string | undefined
  readonly signingKeyGrace?: Duration.DurationInput | undefined
  readonly signingKeyJwk?: SigningKeys.PrivateJwk | undefined
}

/** Works until interrupted, then drains. */
export const work = (options: WorkerOptions) =>
  Effect.gen(function*() {
    yield* ExecutionLog.run
    yield* Console.log(
      `appexec worker is running (${Option.isSome(options.database) ? "database" : "data"}: ${
        Database.describe(options.database, options.dataDir)
      })`
    )
    return yield* Effect.never
  }).pipe(
    Effect.scoped,
    Effect.provide(
      Instance.layer({
        dataDir: options.dataDir,
        database: options.database,
        background: true,
        mediaUrls: MediaSigning.urlsLayer({ baseUrl: options.publicUrl, publicBaseUrl: options.mediaBaseUrl }),
        allowPrivateNetworks: options.allowPrivateNetworks,
        config: {
          workerConcurrency: options.concurrency,
          ...(options.maxRunningPerWorkspace === undefined
            ? {}
            : { maxRunningPerWorkspace: options.maxRunningPerWorkspace }),
          lease: options.claims.lease,
          renewEvery: Math.max(1, Math.floor(options.claims.lease / 3)),
          maxAttempts: options.claims.maxAttempts,
          webhookTimeout: options.claims.webhookTimeout,
          webhookClaimMargin: options.claims.webhookClaimMargin,
          webhookRetryDelays: options.webhookRetryDelays,
          ...(options.signingKeyGrace === undefined ? {} : { signingKeyGrace: options.signingKeyGrace }),
          ...(options.signingKeyJwk === undefined ? {} : { signingKeyJwk: options.signingKeyJwk })
        }
      })
    ),
    Effect.ensuring(Effect.logInfo("stopped"))
  )
