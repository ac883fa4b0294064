/**
 * Retention: finished executions older than `retention` are deleted with their webhook
 * deliveries and their media, in batches. Media go first, so a crash between the two leaves an
 * execution whose media are gone (found and finished next pass), never media no execution names.
 * Uploads whose URLs have expired are deleted too, by the day they expired (`Uploads.sweep`).
 * `run` prunes at start and then every `retentionInterval` while its scope is open.
 */
import type { ExecutionId } from "@appexec/api/Ids"
import { Clock, Effect, Layer, Schedule } from "effect"
import { AppexecConfig, millis } from "../../AppexecConfig.js"
import { BlobStore, executionPrefix } from "../../BlobStore.js"
import type { StorageError } from "../../Errors.js"
import { ExecutionStore } from "../../ExecutionStore.js"
import * as Uploads from "../facade/Uploads.js"

/** Executions deleted per batch. */
const BATCH = 100

/** Deletes finished executions completed before `cutoff` (epoch ms); how many were deleted. */
export const pruneBefore = (
  cutoff: number
): Effect.Effect<number, StorageError, ExecutionStore | BlobStore> =>
  Effect.gen(function*() {
    const store = yield* ExecutionStore
    const blobs = yield* BlobStore
    let deleted = 0
    while (true) {
      const ids: ReadonlyArray<ExecutionId> = yield* store.finishedBefore(cutoff, BATCH)
      if (ids.length === 0) return deleted
      for (const id of ids) yield* blobs.deleteUnder(executionPrefix(id))
      deleted += yield* store.deleteFinished(ids)
      if (ids.length < BATCH) return deleted
    }
  })

/**
 * One pass: deletes what is past the configured retention, and the expired uploads; how many
 * executions were deleted.
 */
export const prune: Effect.Effect<number, StorageError, AppexecConfig | ExecutionStore | BlobStore> = Effect.gen(
  function*() {
    const config = yield* AppexecConfig
    const now = yield* Clock.currentTimeMillis
    const deleted = yield* pruneBefore(now - millis(config.retention))
    yield* Uploads.sweep(now)
    if (deleted > 0) yield* Effect.logInfo(`retention: deleted ${deleted} finished execution(s)`)
    return deleted
  }
).pipe(Effect.withSpan("Retention.prune"))

/** Prunes now and then every `retentionInterval`, until the scope closes; a failed pass is logged. */
export const run = Effect.gen(function*() {
  const config = yield* AppexecConfig
  const pass = prune.pipe(Effect.catchAll((error) => Effect.logError("retention pass failed", error)))
  yield* Effect.forkScoped(Effect.repeat(pass, Schedule.spaced(config.retentionInterval)))
})

/** Retention that runs as long as the layer. */
export const layer = Layer.scopedDiscard(run)
