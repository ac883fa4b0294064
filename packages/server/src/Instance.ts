/**
 * The appexec instance of the standalone server: core and built-in nodes, SQLite under the data directory,
 * produced media in the filesystem blob store under `<data>/media`, random ids. `serve` runs a
 * worker and a webhook dispatcher; the admin commands run neither.
 */
import { AppexecLayer, type Errors, IdGenerator, MediaUrls } from "@appexec/core"
import { BuiltinNodes, builtinNodes, NodesSettings } from "@appexec/nodes"
import { FileBlobStore, NodeOutboundHttp } from "@appexec/platform-node"
import { SqliteStorage } from "@appexec/sqlite"
import { Effect, Either, Layer } from "effect"
import { chmodSync, mkdirSync } from "node:fs"
import { join } from "node:path"
import { masterKeysOf } from "./MasterKey.js"

/** The database file under a data directory. */
export const databaseFile = (dataDir: string) => join(dataDir, "appexec.db")

/** The directory of produced media (the filesystem blob store) under a data directory. */
export const mediaDirectory = (dataDir: string) => join(dataDir, "media")

/** How to build the instance. */
export interface InstanceOptions {
  readonly dataDir: string
  /** Run executions and deliver webhooks in this process (`serve`), or not (admin commands). */
  readonly background: boolean
  readonly config?: AppexecLayer.Options<readonly []>["config"]
  /** Let outbound requests (media, webhooks, provider calls) reach private and loopback addresses. */
  readonly allowPrivateNetworks?: boolean
  /** Where clients download produced media (admin commands, which produce none, use a placeholder). */
  readonly mediaUrls?: Layer.Layer<MediaUrls.MediaUrls, Errors.InvalidConfiguration>
}

/** Creates the data directory when missing and makes it the owner's only (0700). */
export const prepareDataDir = (dataDir: string) => {
  mkdirSync(dataDir, { recursive: true, mode: 0o700 })
  chmodSync(dataDir, 0o700)
}

/**
 * The instance over `<dataDir>/appexec.db`, its secrets sealed with the master key
 * (`APPEXEC_MASTER_KEY`, else `<dataDir>/master.key`; see `MasterKey`).
 */
export const layer = (options: InstanceOptions) =>
  Layer.unwrapEffect(
    Effect.gen(function*() {
      // Every command may be the first to touch the data directory.
      yield* Effect.sync(() => prepareDataDir(options.dataDir))
      const keys = yield* Either.match(masterKeysOf(options.dataDir, process.env), {
        onLeft: Effect.fail,
        onRight: Effect.succeed
      })
      return AppexecLayer.make({
        nodes: builtinNodes,
        config: { ...options.config, masterKey: keys.masterKey, previousMasterKeys: keys.previousMasterKeys },
        worker: options.background,
        webhooks: options.background
      })
    })
  ).pipe(
    Layer.provideMerge(
      BuiltinNodes.layer({
        // Secrets for http.request headers: every APPEXEC_SECRET_<NAME> variable is the secret <name>.
        settings: { secrets: NodesSettings.secretsFromEnv(process.env) },
        mediaUrls: options.mediaUrls ?? MediaUrls.layer({ mode: "public", baseUrl: "http://localhost" })
      })
    ),
    // The filesystem blob store replaces the SQLite one: media stay out of the database.
    Layer.provideMerge(
      Layer.unwrapEffect(
        Effect.sync(() => {
          prepareDataDir(options.dataDir)
          return Layer.merge(
            SqliteStorage.layer({ filename: databaseFile(options.dataDir) }),
            FileBlobStore.layer(mediaDirectory(options.dataDir))
          )
        })
      )
    ),
    Layer.provide(IdGenerator.IdGenerator.random),
    Layer.provide(NodeOutboundHttp.layer({ allowPrivateNetworks: options.allowPrivateNetworks ?? false }))
  )
