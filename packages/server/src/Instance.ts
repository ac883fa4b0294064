/**
 * The appexec instance of the standalone server: core and every built-in node (those of
 * `@appexec/nodes`, `@appexec/nodes-image` and `@appexec/nodes-video`), random ids, its
 * storage, and its secrets sealed with the master key (`APPEXEC_MASTER_KEY`, else
 * `<data>/master.key`; see `MasterKey`). On SQLite (the default): the database under the data
 * directory, produced media in the filesystem blob store under `<data>/media`, the media URL key
 * in `<data>/media.secret`. On PostgreSQL (`--database postgres://…`): every port in the database,
 * media and the media URL key included, so that every process of a deployment serves every
 * request alike (each process then needs the same `APPEXEC_MASTER_KEY`). With `media`, produced
 * media go to an S3-compatible bucket instead, on either database (`MediaStorage`). `serve` and `worker` run
 * a worker and a webhook dispatcher; `serve --no-worker` and the admin commands run neither.
 */
import { AppexecLayer, type Errors, IdGenerator, MediaUrls } from "@appexec/core"
import { BuiltinNodes, builtinNodes, NodesSettings, ProviderOpenAI } from "@appexec/nodes"
import { imageNodes } from "@appexec/nodes-image"
import { VideoNodes, videoNodes } from "@appexec/nodes-video"
import { FileBlobStore, NodeOutboundHttp, NodeWebhookSigner } from "@appexec/platform-node"
import { PostgresClient, PostgresSecrets, PostgresStorage } from "@appexec/postgres"
import { SqliteStorage } from "@appexec/sqlite"
import { Effect, Either, Layer, Option } from "effect"
import { chmodSync, mkdirSync } from "node:fs"
import { join } from "node:path"
import type { Database } from "./Database.js"
import { masterKeysOf } from "./MasterKey.js"
import { MediaSecret, secretOf } from "./MediaSigning.js"
import * as MediaStorage from "./MediaStorage.js"

/** The database file under a data directory. */
export const databaseFile = (dataDir: string) => join(dataDir, "appexec.db")

/** The directory of produced media (the filesystem blob store) under a data directory. */
export const mediaDirectory = (dataDir: string) => join(dataDir, "media")

/** How to build the instance. */
export interface InstanceOptions {
  readonly dataDir: string
  /** PostgreSQL instead of SQLite under `dataDir` (see `Database`). */
  readonly database?: Database
  /** Run executions and deliver webhooks in this process (`serve`, `worker`), or not. */
  readonly background: boolean
  readonly config?: AppexecLayer.Options<readonly []>["config"]
  /** Let outbound requests (media, webhooks, provider calls) reach private and loopback addresses. */
  readonly allowPrivateNetworks?: boolean
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
  Option.match(options.database ?? Option.none(), {
    onNone: () =>
      Layer.unwrapEffect(
        Effect.sync(() => {
          prepareDataDir(options.dataDir)
          return Layer.mergeAll(
            SqliteStorage.layer({ filename: databaseFile(options.dataDir) }),
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

/** The instance over the database of `options`. */
export const layer = (options: InstanceOptions) => {
  const media = options.media
  const bucket = media === undefined ? undefined : MediaStorage.storeLayer(media)
  // The bucket's blob store replaces the default one (merged last, it wins).
  const stored = bucket === undefined ? defaultStorage(options) : Layer.merge(defaultStorage(options), bucket)
  const signedUrls = (options.mediaUrls ?? MediaUrls.layer({ mode: "public", baseUrl: "http://localhost" })).pipe(
    // The same layer as below: built once.
    Layer.provide(stored)
  )
  const mediaUrls = bucket !== undefined && media?.direct === true
    ? MediaStorage.directUrlsLayer.pipe(Layer.provide(Layer.merge(signedUrls, bucket)))
    : signedUrls
  return Layer.unwrapEffect(
    Effect.gen(function*() {
      // Every command may be the first to touch the data directory.
      yield* Effect.sync(() => prepareDataDir(options.dataDir))
      const keys = yield* Either.match(masterKeysOf(options.dataDir, process.env), {
        onLeft: Effect.fail,
        onRight: Effect.succeed
      })
      if (Option.isSome(options.database ?? Option.none()) && keys.source === "file") {
        yield* Effect.logWarning(
          "the master key comes from the data directory: every other process on this database needs the same key (set APPEXEC_MASTER_KEY)"
        )
      }
      return AppexecLayer.make({
        nodes: [...builtinNodes, ...imageNodes, ...videoNodes],
        config: { ...options.config, masterKey: keys.masterKey, previousMasterKeys: keys.previousMasterKeys },
        worker: options.background,
        webhooks: options.background
      })
    })
  ).pipe(
    Layer.provideMerge(
      Layer.unwrapEffect(
        // The limits of video work: APPEXEC_VIDEO_* and APPEXEC_FFMPEG (NodesSettings.videoConfig).
        Effect.map(NodesSettings.videoConfig, (video) => {
          const nodes = BuiltinNodes.layer({
            // Secrets for http.request headers: every APPEXEC_SECRET_<NAME> variable is the secret <name>.
            settings: { secrets: NodesSettings.secretsFromEnv(process.env), video },
            mediaUrls
          })
          // A process that runs executions removes, as it starts, the temporary work directories
          // a killed one left (before its worker takes anything).
          return options.background
            ? Layer.merge(nodes, Layer.effectDiscard(VideoNodes.sweepStaleWorkDirs(video)))
            : nodes
        })
      )
    ),
    // The default API root of provider.openai: APPEXEC_OPENAI_BASE_URL (Ollama, vLLM, …), else OpenAI's.
    Layer.provideMerge(ProviderOpenAI.layerFromEnv(process.env)),
    Layer.provideMerge(stored),
    Layer.provide(IdGenerator.IdGenerator.random),
    Layer.provide(NodeOutboundHttp.layer({ allowPrivateNetworks: options.allowPrivateNetworks ?? false })),
    // Webhook signatures on a worker thread, started with the first one.
    Layer.provide(NodeWebhookSigner.layer())
  )
}
