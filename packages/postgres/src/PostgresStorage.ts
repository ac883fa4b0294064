/**
 * Every storage port of appexec on one PostgreSQL database: many API and worker processes, on
 * many machines, sharing it.
 *
 * ```ts
 * const AppexecLive = AppexecLayer.make().pipe(
 *   Layer.provide(PostgresStorage.layer({ connectionString: "postgres://appexec@db/appexec" })),
 *   Layer.provide(IdGenerator.IdGenerator.random)
 * )
 * ```
 */
import {
  type AppexecLayer,
  type CountedStarts,
  DatabasePool,
  type Errors,
  type MediaStoreRegistry,
  type StorageLock
} from "@appexec/core"
import {
  SqlBlobStore,
  SqlMediaStoreRegistry,
  SqlOperatorViews,
  SqlProcessRegistry,
  SqlSealedSecretStore,
  SqlSigningKeyStore
} from "@appexec/sql"
import { Effect, Layer } from "effect"
import * as AdvisoryLock from "./internal/AdvisoryLock.js"
import * as Revisions from "./internal/Revisions.js"
import * as Runner from "./internal/Runner.js"
import * as WorkNotifier from "./internal/WorkNotifier.js"
import * as WorkSignal from "./internal/WorkSignal.js"
import * as PostgresAppStore from "./PostgresAppStore.js"
import * as PostgresClient from "./PostgresClient.js"
import * as PostgresCountedStarts from "./PostgresCountedStarts.js"
import * as PostgresExecutionQueue from "./PostgresExecutionQueue.js"
import * as PostgresExecutionReports from "./PostgresExecutionReports.js"
import * as PostgresExecutionStore from "./PostgresExecutionStore.js"
import * as PostgresKeyStore from "./PostgresKeyStore.js"
import * as PostgresWebhookOutbox from "./PostgresWebhookOutbox.js"

/** How to reach the database (see `PostgresClient.Options`). */
export type Options = PostgresClient.Options

/**
 * Every storage port over the pool of `PostgresClient`: the dialect-neutral stores of
 * `@appexec/sql` through its `SqlRunner`, and PostgreSQL's own claims, batched writes, wake-ups and
 * live announcements; the record of the deployment's other media stores (`MediaStoreRegistry`);
 * the storage's lock (`StorageLock`: an advisory lock); and the pool's figures for the metrics
 * (`DatabasePool`).
 */
export const layerFromClient: Layer.Layer<
  | AppexecLayer.Storage
  | CountedStarts.CountedStarts
  | MediaStoreRegistry.MediaStoreRegistry
  | StorageLock.StorageLock
  | DatabasePool.DatabasePool,
  Errors.StorageError,
  PostgresClient.PostgresClient
> = Layer.mergeAll(
  AdvisoryLock.layer,
  Layer.effect(
    DatabasePool.DatabasePool,
    Effect.map(PostgresClient.PostgresClient, (client) => DatabasePool.DatabasePool.of({ stats: client.poolStats }))
  ),
  // One read of both revisions for the key cache and the app cache, also made by the rate-limit hits
  // and by the counted starts.
  Layer.mergeAll(PostgresAppStore.layer, PostgresKeyStore.layer, Revisions.rateLimitLayer, PostgresCountedStarts.layer)
    .pipe(
      Layer.provide(Revisions.layer)
    ),
  SqlBlobStore.layer,
  SqlMediaStoreRegistry.layer,
  SqlSigningKeyStore.layer,
  SqlSealedSecretStore.layer,
  SqlOperatorViews.layer,
  SqlProcessRegistry.layer,
  // One notifier for the store and the outbox, one listening connection for the last three.
  Layer.mergeAll(
    PostgresExecutionStore.layer,
    Layer.mergeAll(PostgresExecutionQueue.layer, PostgresWebhookOutbox.layer, PostgresExecutionReports.layer).pipe(
      Layer.provide(WorkSignal.layer)
    )
  ).pipe(Layer.provide(WorkNotifier.layer))
).pipe(Layer.provide(Runner.layer))

/**
 * Connects to the database (creating the schema and migrating it when needed) and provides every
 * storage port on it; the pool and the listening connection close when the layer's scope closes.
 */
export const layer = (
  options: Options
): Layer.Layer<
  | AppexecLayer.Storage
  | CountedStarts.CountedStarts
  | MediaStoreRegistry.MediaStoreRegistry
  | StorageLock.StorageLock
  | DatabasePool.DatabasePool,
  Errors.StorageError
> => layerFromClient.pipe(Layer.provide(PostgresClient.layer(options)))
