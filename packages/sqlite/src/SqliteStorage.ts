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
import type { AppexecLayer, Errors, MediaStoreRegistry } from "@appexec/core"
import {
  SqlBlobStore,
  SqlExecutionReports,
  SqlMediaStoreRegistry,
  SqlOperatorViews,
  SqlRateLimitStore,
  SqlSealedSecretStore,
  SqlSigningKeyStore
} from "@appexec/sql"
import { Layer } from "effect"
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

/**
 * Opens (creating and migrating when needed) the database at `options.filename` and provides
 * every storage port on it, and the record of the deployment's other media stores
 * (`MediaStoreRegistry`); the database is closed when the layer's scope closes.
 */
export const layer = (
  options: Options
): Layer.Layer<AppexecLayer.Storage | MediaStoreRegistry.MediaStoreRegistry, Errors.StorageError> =>
  Layer.mergeAll(
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
    Layer.mergeAll(SqliteExecutionStore.layer, SqliteExecutionQueue.layer).pipe(Layer.provide(WorkSignal.layer))
  ).pipe(Layer.provide(Runner.layer.pipe(Layer.provideMerge(SqliteClient.layer(options)))))
