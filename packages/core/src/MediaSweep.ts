/**
 * The orphan sweep (docs/media.md, *Orphans*): finds the blobs of a store that nothing refers to
 * any more, and deletes them. An execution's blob (`executions/<id>/…`) is an orphan when no
 * execution `<id>` exists (an older `prune` deleted the execution and left its media in a store
 * it was not told about); an upload (`uploads/<day>/…`) when its URL expired on a day the upload
 * sweep has passed (two days back, as `Retention` deletes them). A blob written less than
 * `minAge` ago is never deleted, orphan or not (`Fresh`), so that a blob being written, or one
 * whose execution another process is about to record, is spared; keys appexec does not make are
 * left alone (`Unknown`). With `dryRun` nothing is deleted: the findings say what would be.
 */
import { ExecutionId } from "@appexec/api/Ids"
import { Chunk, Clock, Data, Duration, Effect, Schema, Stream } from "effect"
import type * as BlobStore from "./BlobStore.js"
import { StorageError } from "./Errors.js"
import { ExecutionStore } from "./ExecutionStore.js"
import * as Uploads from "./internal/facade/Uploads.js"

/** What the sweep found of one blob (none is reported for a blob something refers to). */
export type Finding = Data.TaggedEnum<{
  /** Nothing refers to it: deleted (or, in a dry run, to be deleted). */
  Orphan: { readonly entry: BlobStore.BlobEntry; readonly why: "execution" | "upload" }
  /** Nothing refers to it, but it was written less than `minAge` ago: kept. */
  Fresh: { readonly entry: BlobStore.BlobEntry; readonly why: "execution" | "upload" }
  /** A key appexec does not make: kept. */
  Unknown: { readonly entry: BlobStore.BlobEntry }
}>

/** Constructors and matchers of `Finding`. */
export const Finding = Data.taggedEnum<Finding>()

/** How to sweep. */
export interface Options {
  /** Blobs written more recently than this are kept (an hour, say). */
  readonly minAge: Duration.DurationInput
  /** Report, delete nothing. */
  readonly dryRun: boolean
}

/** Blobs looked at (and executions looked up) at once. */
const PAGE = 500

const DAY_MS = 24 * 60 * 60 * 1000

const isExecutionId = Schema.is(ExecutionId)

/** What a key is to the sweep. */
type Kind =
  | { readonly _tag: "Execution"; readonly executionId: string }
  | { readonly _tag: "Upload"; readonly day: string }
  | { readonly _tag: "Kept" }
  | { readonly _tag: "Unknown" }

/** Reads a key of the store: an execution's blob, an upload by its expiry day, the sweep's record, or another. */
export const kindOf = (key: string): Kind => {
  if (key === Uploads.SWEPT_KEY) return { _tag: "Kept" }
  const execution = /^executions\/([^/]+)\/./.exec(key)
  if (execution !== null) return { _tag: "Execution", executionId: execution[1]! }
  const upload = /^uploads\/(\d{4}-\d{2}-\d{2})\/./.exec(key)
  if (upload !== null) return { _tag: "Upload", day: upload[1]! }
  return { _tag: "Unknown" }
}

/** Whether `store` can be swept (and media moved out of it): it lists its blobs and deletes them one by one. */
export const canSweep = (
  store: BlobStore.BlobStore["Type"]
): store is BlobStore.BlobStore["Type"] & Required<Pick<BlobStore.BlobStore["Type"], "list" | "deleteKeys">> =>
  store.list !== undefined && store.deleteKeys !== undefined

/**
 * Sweeps `store`: a finding for each orphan (deleted unless `dryRun`, a page at a time), each
 * fresh orphan kept and each unknown key; none for what is referred to. Fails with a
 * `StorageError` when the store cannot list or delete single blobs.
 */
export const sweep = (
  store: BlobStore.BlobStore["Type"],
  options: Options
): Stream.Stream<Finding, StorageError, ExecutionStore> => {
  if (!canSweep(store)) {
    return Stream.fail(
      new StorageError({ operation: "BlobStore.list", cause: "this store cannot list its blobs or delete one" })
    )
  }
  return Stream.unwrap(Effect.gen(function*() {
    const executions = yield* ExecutionStore
    const now = yield* Clock.currentTimeMillis
    const freshAfter = now - Duration.toMillis(options.minAge)
    // The last expiry day `Uploads.sweep` deletes: its uploads should be gone already.
    const lastSweptDay = Uploads.dayOf(now - 2 * DAY_MS)
    return store.list("").pipe(
      Stream.rechunk(PAGE),
      Stream.mapChunksEffect((page) =>
        Effect.gen(function*() {
          const entries = Chunk.toReadonlyArray(page).map((entry) => ({ entry, kind: kindOf(entry.key) }))
          // A segment that is no execution id names no execution: its blobs are orphans too.
          const ids = new Set<ExecutionId>()
          for (const { kind } of entries) {
            if (kind._tag === "Execution" && isExecutionId(kind.executionId)) ids.add(kind.executionId)
          }
          const existing = ids.size === 0
            ? new Set<string>()
            : new Set((yield* executions.viewsAmong([...ids])).map((view) => view.executionId))
          const findings: Array<Finding> = []
          for (const { entry, kind } of entries) {
            const why = kind._tag === "Execution"
              ? existing.has(kind.executionId) ? undefined : "execution" as const
              : kind._tag === "Upload"
              ? kind.day <= lastSweptDay ? "upload" as const : undefined
              : undefined
            if (kind._tag === "Unknown") findings.push(Finding.Unknown({ entry }))
            else if (why !== undefined) {
              findings.push(
                entry.modifiedAt > freshAfter ? Finding.Fresh({ entry, why }) : Finding.Orphan({ entry, why })
              )
            }
          }
          const orphans = findings.flatMap((finding) => finding._tag === "Orphan" ? [finding.entry.key] : [])
          if (!options.dryRun && orphans.length > 0) yield* store.deleteKeys(orphans)
          return Chunk.fromIterable(findings)
        })
      )
    )
  }))
}
