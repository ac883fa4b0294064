/**
 * Every storage port of appexec on one SQLite file: the embedded default. The dialect-neutral
 * stores of `@appexec/sql` run on the connection through its `SqlRunner`.
 *
 * ```ts
 * const AppexecLive = AppexecLayer.make().pipe(
 *   Layer.provide(SqliteStorage.layer({ filename: "appexec.db" })),
 *   Layer.provide(IdGenerator.IdGenerator.random)
 * )
 * ```
 */
import { type AppexecLayer, type Errors, type MediaStoreRegistry, StorageLock } from "@appexec/core"
import {
  SqlBlobStore,
  SqlExecutionReports,
  SqlMediaStoreRegistry,
  SqlOperatorViews,
  SqlProcessRegistry,
  SqlRateLimitStore,
  SqlSealedSecretStore,
  SqlSigningKeyStore
} from "@appexec/sql"
import { Effect, Layer } from "effect"
import * as Runner from "./internal/Runner.js"
import { WorkSignal } from "./internal/WorkSignal.js"
import * as SqliteAppStore from "./SqliteAppStore.js"
import * as SqliteClient from "./SqliteClient.js"
import * as SqliteExecutionQueue from "./SqliteExecutionQueue.js"
import * as SqliteExecutionStore from "./SqliteExecutionStore.js"
import * as SqliteKeyStore from "./SqliteKeyStore.js"
import * as SqliteWebhookOutbox from "./SqliteWebhookOutbox.js"

/** How to open the database (see `SqliteClient.Options`). */
export type Options = SqliteClient.Options

/** The storage's lock: the database's write lock, whatever the name (`SqliteClient.exclusive`). */
const lockLayer = Layer.effect(
  StorageLock.StorageLock,
  Effect.map(SqliteClient.SqliteClient, (client) => ({ withLock: () => client.exclusive }))
)

/**
 * Opens (creating and migrating when needed) the database at `options.filename` and provides
 * every storage port on it, the record of the deployment's other media stores
 * (`MediaStoreRegistry`), and its lock (`StorageLock`: the write lock); the database is closed
 * when the layer's scope closes.
 */
export const layer = (
  options: Options
): Layer.Layer<
  AppexecLayer.Storage | MediaStoreRegistry.MediaStoreRegistry | StorageLock.StorageLock,
  Errors.StorageError
> =>
  Layer.mergeAll(
    lockLayer,
    SqliteAppStore.layer,
    SqliteKeyStore.layer,
    SqlBlobStore.layer,
    SqlMediaStoreRegistry.layer,
    SqlSigningKeyStore.layer,
    SqlRateLimitStore.layer,
    SqlSealedSecretStore.layer,
    SqliteWebhookOutbox.layer,
    SqlExecutionReports.layer,
    SqlOperatorViews.layer,
    SqlProcessRegistry.layer,
    Layer.mergeAll(SqliteExecutionStore.layer, SqliteExecutionQueue.layer).pipe(Layer.provide(WorkSignal.layer))
  ).pipe(Layer.provide(Runner.layer.pipe(Layer.provideMerge(SqliteClient.layer(options)))))
