/**
 * The appexec instance of the standalone server: core and every built-in node (those of
 * `@appexec/nodes`, `@appexec/nodes-image`, `@appexec/nodes-video`, `@appexec/nodes-ocr` and
 * `@appexec/nodes-comfyui`, whose ComfyUI servers outbound requests may reach),
 * random ids, its storage, and its secrets sealed with the master key (`APPEXEC_MASTER_KEY`, else
 * `<data>/master.key`; see `MasterKey`). On SQLite (the default): the database under the data
 * directory, produced media in the filesystem blob store under `<data>/media`, the media URL key
 * in `<data>/media.secret`. On PostgreSQL (`--database postgres://…`): every port in the database,
 * media and the media URL key included, so that every process of a deployment serves every
 * request alike (each process then needs the same `APPEXEC_MASTER_KEY`). With `media`, produced
 * media go to an S3-compatible bucket instead, on either database (`MediaStorage`), and media kept
 * in any other store of the deployment are still read and deleted (`MediaStores`). `serve` and `worker` run
 * a worker and a webhook dispatcher; `serve --no-worker` and the admin commands run neither. The
 * settings of the work and of outbound requests (`Work`) apply alike in every process; secrets
 * come from the sealed store, with the process's `APPEXEC_SECRET_<NAME>` variables below it. An
 * admin command never makes a master key file, except with the SQLite database it makes.
 */
import { AppexecLayer, AppexecMetrics, type Errors, IdGenerator, MediaUrls, type ProcessIdentity } from "@appexec/core"
import { BuiltinNodes, builtinNodes, NodesSettings, ProviderOpenAI } from "@appexec/nodes"
import { ComfyuiNodes, comfyuiNodes, ComfyuiServers } from "@appexec/nodes-comfyui"
import { imageNodes } from "@appexec/nodes-image"
import { OcrNodes, ocrNodes } from "@appexec/nodes-ocr"
import { VideoNodes, videoNodes } from "@appexec/nodes-video"
import { FileBlobStore, NodeOutboundHttp, NodeProcessMetrics, NodeWebhookSigner } from "@appexec/platform-node"
import { PostgresClient, PostgresSecrets, PostgresStorage } from "@appexec/postgres"
import { SqliteStorage } from "@appexec/sqlite"
import { Effect, Either, Layer, Option } from "effect"
import { chmodSync, existsSync, mkdirSync } from "node:fs"
import { join } from "node:path"
import * as Database from "./Database.js"
import { masterKeysOf } from "./MasterKey.js"
import { MediaSecret, secretOf } from "./MediaSigning.js"
import * as MediaStorage from "./MediaStorage.js"
import * as MediaStores from "./MediaStores.js"
import { VERSION } from "./Version.js"
import * as Work from "./Work.js"

/** The database file under a data directory. */
export const databaseFile = (dataDir: string) => join(dataDir, "appexec.db")

/** The directory of produced media (the filesystem blob store) under a data directory. */
export const mediaDirectory = (dataDir: string) => join(dataDir, "media")

/** How to build the instance. */
export interface InstanceOptions {
  readonly dataDir: string
  /** PostgreSQL instead of SQLite under `dataDir`, and whether to migrate (see `Database`); absent: SQLite, migrated. */
  readonly database?: Database.Database
  /** Run executions and deliver webhooks in this process (`serve`, `worker`), or not. */
  readonly background: boolean
  /** The process as a refused outbound request names it (`appexec worker`); default `appexec`. */
  readonly process?: string
  /** Who the process is (`serve`, `worker`): it keeps a row of itself in the registry of processes. */
  readonly identity?: ProcessIdentity.Options
  /** The settings of the work and of outbound requests (absent: the defaults, no private address). */
  readonly work?: Work.Work
  /** Engine settings beyond those of `work`. */
  readonly config?: AppexecLayer.Options<readonly []>["config"]
  /**
   * An admin command: without `APPEXEC_MASTER_KEY` it reads the master key file of the data
   * directory, and makes one only along with the SQLite database it makes (never on PostgreSQL).
   */
  readonly admin?: boolean
  /** Where clients download produced media (admin commands, which produce none, use a placeholder). */
  readonly mediaUrls?: Layer.Layer<MediaUrls.MediaUrls, Errors.InvalidConfiguration | Errors.StorageError, MediaSecret>
  /** Produced media in a bucket (absent: the data directory on SQLite, the database on PostgreSQL). */
  readonly media?: MediaStorage.S3Media | undefined
}

/** Creates the data directory when missing and makes it the owner's only (0700). */
export const prepareDataDir = (dataDir: string) => {
  mkdirSync(dataDir, { recursive: true, mode: 0o700 })
  chmodSync(dataDir, 0o700)
}

/** The storage ports and the media URL key of the instance, media in the default store. */
const defaultStorage = (options: InstanceOptions) =>
  Option.match((options.database ?? Database.sqlite).postgres, {
    onNone: () =>
      Layer.unwrapEffect(
        Effect.sync(() => {
          prepareDataDir(options.dataDir)
          return Layer.mergeAll(
            SqliteStorage.layer({
              filename: databaseFile(options.dataDir),
              migrate: (options.database ?? Database.sqlite).migrate
            }),
            // The filesystem blob store replaces the SQLite one: media stay out of the database.
            FileBlobStore.layer(mediaDirectory(options.dataDir)),
            Layer.succeed(MediaSecret, Effect.sync(() => secretOf(options.dataDir)))
          )
        })
      ),
    onSome: (postgres) =>
      Layer.merge(
        PostgresStorage.layerFromClient,
        Layer.effect(
          MediaSecret,
          Effect.map(PostgresClient.PostgresClient, (client) =>
            PostgresSecrets.getOrCreate("media-urls").pipe(
              Effect.provideService(PostgresClient.PostgresClient, client)
            ))
        )
      ).pipe(Layer.provide(PostgresClient.layer(postgres)))
  })

/**
 * The instance over the database of `options`. Whether the SQLite database exists yet is read
 * before anything is built (an admin command makes a master key file only with a new database).
 */
export const layer = (options: InstanceOptions) =>
  Layer.unwrapEffect(Effect.sync(() => build(options, !existsSync(databaseFile(options.dataDir)))))

/** The instance, knowing whether the SQLite database is `fresh` (not made yet). */
const build = (options: InstanceOptions, fresh: boolean) => {
  const media = options.media
  const bucket = media === undefined ? undefined : MediaStorage.bucketLayer(media)
  // New media go to the bucket when there is one; every store the deployment used is read (MediaStores).
  const stored = MediaStores.layer(defaultStorage(options), media, bucket)
  const signedUrls = (options.mediaUrls ?? MediaUrls.layer({ mode: "public", baseUrl: "http://localhost" })).pipe(
    // The same layer as below: built once.
    Layer.provide(stored)
  )
  const mediaUrls = bucket !== undefined && media?.direct === true
    ? MediaStorage.directUrlsLayer.pipe(Layer.provide(Layer.merge(signedUrls, bucket)))
    : signedUrls
  const work = options.work ?? { allowPrivateNetworks: false }
  const onPostgres = Database.isPostgres(options.database ?? Database.sqlite)
  const nodes = BuiltinNodes.layer({ ...(work.nodes === undefined ? {} : { settings: work.nodes }), mediaUrls })
  return Layer.unwrapEffect(
    Effect.gen(function*() {
      // Every command may be the first to touch the data directory, but an admin command on
      // PostgreSQL has nothing to keep there.
      if (!(options.admin === true && onPostgres)) yield* Effect.sync(() => prepareDataDir(options.dataDir))
      const create = options.admin !== true || (!onPostgres && fresh)
      const keys = yield* Either.match(masterKeysOf(options.dataDir, process.env, { create }), {
        onLeft: Effect.fail,
        onRight: Effect.succeed
      })
      if (onPostgres && keys.source === "file") {
        yield* Effect.logWarning(
          "the master key comes from the data directory: every other process on this database needs the same key (set APPEXEC_MASTER_KEY)"
        )
      }
      return AppexecLayer.make({
        nodes: [...builtinNodes, ...imageNodes, ...videoNodes, ...ocrNodes, ...comfyuiNodes],
        config: {
          ...Work.configOf(work),
          ...options.config,
          masterKey: keys.masterKey,
          previousMasterKeys: keys.previousMasterKeys,
          nextMasterKeys: keys.nextMasterKeys
        },
        worker: options.background,
        webhooks: options.background,
        ...(options.identity === undefined ? {} : { process: options.identity }),
        // Secrets: the sealed store, then every APPEXEC_SECRET_<NAME> variable as the secret <name>.
        environment: process.env
      })
    })
  ).pipe(
    // A process that runs executions removes, as it starts, the temporary work directories a
    // killed one left (before its worker takes anything).
    Layer.provideMerge(
      options.background
        ? Layer.merge(nodes, Layer.effectDiscard(VideoNodes.sweepStaleWorkDirs(NodesSettings.make(work.nodes).video)))
        : nodes
    ),
    // The default API root of provider.openai: --openai-base-url (APPEXEC_OPENAI_BASE_URL), else OpenAI's.
    Layer.provideMerge(
      ProviderOpenAI.layerFromEnv({ [ProviderOpenAI.BASE_URL_ENV]: work.openaiBaseUrl })
    ),
    // image.ocr's worker threads, started by the first reading: --ocr-* (APPEXEC_OCR_*).
    Layer.provideMerge(OcrNodes.layer(work.ocr ?? {})),
    // The ComfyUI servers in the operator views (GET /operator/backends of the admin port).
    Layer.provideMerge(ComfyuiServers.layer),
    // provider.comfyui's servers: --comfyui (APPEXEC_COMFYUI), one prompt of this process at a time on each.
    Layer.provideMerge(ComfyuiNodes.layer({
      servers: work.comfyui ?? [],
      ...(work.comfyuiAuthSecret === undefined ? {} : { authSecret: work.comfyuiAuthSecret })
    })),
    Layer.provideMerge(stored),
    Layer.provide(IdGenerator.IdGenerator.random),
    Layer.provide(NodeOutboundHttp.layer({
      allowPrivateNetworks: work.allowPrivateNetworks,
      allowHosts: Work.allowedHostsOf(work),
      naming: {
        process: options.process ?? "appexec",
        allowHosts: "--allow-hosts",
        allowPrivateNetworks: "--allow-private-networks"
      }
    })),
    // Webhook signatures on a worker thread, started with the first one.
    Layer.provide(NodeWebhookSigner.layer()),
    // The metrics of a process that serves or works: its release, and its process's own figures.
    Layer.provideMerge(
      options.admin === true
        ? Layer.empty
        : Layer.merge(
          NodeProcessMetrics.layer,
          Layer.effectDiscard(AppexecMetrics.recordBuildInfo({ version: VERSION, node: process.versions.node }))
        )
    )
  )
}
