/**
 * Port: where executions live. Writes after acceptance are fenced by the lease of the worker
 * that runs the execution (see `ExecutionQueue`).
 */
import type { ExecutionStatus } from "@appexec/api/Execution"
import type { AppId, ExecutionId, WorkspaceId } from "@appexec/api/Ids"
import { Context, Effect, Either, type Option } from "effect"
import { LeaseLost, type StorageError } from "./Errors.js"
import type { Lease } from "./ExecutionQueue.js"
import type { ExecutionRecord, ExecutionView } from "./ExecutionRecord.js"
import type { OutboxEntry } from "./WebhookOutbox.js"

/** Which executions `list` answers. */
export interface ListFilter {
  readonly workspaceId?: WorkspaceId | undefined
  readonly status?: ExecutionStatus | undefined
  /** At most this many, newest first. */
  readonly limit: number
}

/** Which executions of a workspace `page` answers: newest (by insertion) first, filtered. */
export interface PageQuery {
  readonly workspaceId: WorkspaceId
  readonly status?: ExecutionStatus | undefined
  readonly appId?: AppId | undefined
  /** Only executions inserted before this position: the `next` of the page before; from the newest when absent. */
  readonly before?: number | undefined
  /** At most this many (positive). */
  readonly limit: number
}

/** One page of `page`: its executions, and where the page after it starts. */
export interface Page {
  readonly executions: ReadonlyArray<ExecutionRecord>
  /**
   * The position to pass as `before` for the next page; null when no execution the query matches
   * comes after this page (the last page is never followed by an empty one).
   */
  readonly next: number | null
}

/**
 * How many executions are unfinished (status `queued` or `running`), each counted by its lease as
 * the operator views count them (`OperatorViews.WorkspaceLoad`): running while it holds a live lease
 * (one that ends after the `now` it is read at), queued otherwise — never claimed, handed back by a
 * stopping worker (its status stays `running`), or its lease ran out; and since when the oldest
 * queued one waits.
 */
export interface OpenCounts {
  /** Unfinished executions under no live lease: they wait for a worker. */
  readonly queued: number
  /** Unfinished executions under a live lease: a worker runs them. */
  readonly running: number
  /** The `createdAt` (epoch ms) of the oldest queued execution (as counted here); null when none is. */
  readonly oldestQueuedAt: number | null
}
/**
 * An `Idempotency-Key` to record with a new execution: the workspace's key, a digest of the
 * request it came with, and when it stops counting (epoch ms).
 */
export interface IdempotencyKey {
  readonly workspaceId: WorkspaceId
  readonly key: string
  readonly fingerprint: string
  readonly expiresAt: number
}

/** What an idempotent insert did: recorded the new execution, or found the key's live first one. */
export type IdempotentInsert =
  | { readonly _tag: "Inserted" }
  | { readonly _tag: "Existing"; readonly executionId: ExecutionId; readonly fingerprint: string }

/** One save of `ExecutionStore.saveAll`: what `save` takes. */
export interface Save {
  readonly record: ExecutionRecord
  readonly lease: Lease
  readonly outbox?: OutboxEntry | undefined
}

/**
 * Saves of many executions in one write, each as `save` does it (fenced by its own lease, with its
 * own outbox entry): one answer per save, in order, `LeaseLost` for a save whose lease is no longer
 * current, a `StorageError` for a save that failed (every save's when the write as a whole did).
 * `save` is the store's `save` it stands for (see `saveAllOf`).
 */
export interface SaveAll {
  (saves: ReadonlyArray<Save>): Effect.Effect<ReadonlyArray<Either.Either<void, LeaseLost | StorageError>>>
  readonly save: ExecutionStore["Type"]["save"]
}

/** Storage of executions. */
export class ExecutionStore extends Context.Tag("@appexec/core/ExecutionStore")<
  ExecutionStore,
  {
    /** Durably records a queued execution; once this succeeds it is claimable from the queue. */
    readonly insert: (record: ExecutionRecord) => Effect.Effect<void, StorageError>
    /**
     * Records a queued execution under an idempotency key, atomically: when the workspace holds
     * the key unexpired (`now` < its `expiresAt`), nothing is written and the key's execution is
     * returned; otherwise the execution and the key are written together (an expired key is
     * replaced). Two concurrent calls with one key record one execution.
     */
    readonly insertIdempotent: (
      record: ExecutionRecord,
      key: IdempotencyKey,
      now: number
    ) => Effect.Effect<IdempotentInsert, StorageError>
    /** The execution with this id, if any. */
    readonly get: (executionId: ExecutionId) => Effect.Effect<Option.Option<ExecutionRecord>, StorageError>
    /**
     * The public part of the execution with this id, if any: the read every poll makes, so it
     * reads only the columns of the answer and hands the outputs over as stored (JSON text).
     */
    readonly getView: (executionId: ExecutionId) => Effect.Effect<Option.Option<ExecutionView>, StorageError>
    /**
     * Which of `executionIds` are finished (`completed` or `failed`); unknown ids are left out. One
     * cheap look for many waiters at once, reading no record.
     */
    readonly finishedAmong: (
      executionIds: ReadonlyArray<ExecutionId>
    ) => Effect.Effect<ReadonlyArray<ExecutionId>, StorageError>
    /**
     * The views (`getView`) of those of `executionIds` that exist, in one read; unknown ids are
     * left out. One look for many long polls waiting for a change made by another process.
     */
    readonly viewsAmong: (
      executionIds: ReadonlyArray<ExecutionId>
    ) => Effect.Effect<ReadonlyArray<ExecutionView>, StorageError>
    /**
     * Writes what a transition changes (status, outputs, error message, start and end times; the
     * rest stays as inserted) while `lease` is still the current lease on the execution, else fails
     * with `LeaseLost` and writes nothing. When the record is terminal, the lease ends and `outbox`
     * (if any) is recorded in the same atomic write, so a finished execution never lacks its webhook.
     */
    readonly save: (
      record: ExecutionRecord,
      lease: Lease,
      outbox?: OutboxEntry
    ) => Effect.Effect<void, LeaseLost | StorageError>
    /**
     * Optional: `save` of many executions in one write (the worker saves so the runs' saves of one
     * turn, as graphile-worker's `completeJobs`). Used only while `save` is the one it stands for
     * (`saveAllOf`): a store that wraps `save`, spreading the rest, is saved one execution at a
     * time through its `save`.
     */
    readonly saveAll?: SaveAll | undefined
    /** Executions for operators, newest (by creation) first. */
    readonly list: (filter: ListFilter) => Effect.Effect<ReadonlyArray<ExecutionRecord>, StorageError>
    /**
     * A page of one workspace's executions, newest first by insertion order, keyset-paged on
     * that order (a position, not an offset: executions inserted meanwhile neither shift nor
     * repeat a later page), read from an index whichever filters are given.
     */
    readonly page: (query: PageQuery) => Effect.Effect<Page, StorageError>
    /** Up to `limit` ids of finished executions whose `completedAt` is before `cutoff` (epoch ms), oldest first. */
    readonly finishedBefore: (
      cutoff: number,
      limit: number
    ) => Effect.Effect<ReadonlyArray<ExecutionId>, StorageError>
    /**
     * Deletes the finished executions among `executionIds` with their webhook deliveries and
     * their reports (`ExecutionReports`), in one atomic write; an unfinished one is kept. Answers
     * how many were deleted.
     */
    readonly deleteFinished: (executionIds: ReadonlyArray<ExecutionId>) => Effect.Effect<number, StorageError>
    /**
     * How many queued executions of the execution's workspace come before it in the claim order
     * (within a workspace, the order of insertion). 0 when it is not queued, or not known.
     */
    readonly queuePosition: (executionId: ExecutionId) => Effect.Effect<number, StorageError>
    /**
     * How many unfinished executions are queued and how many run at `now` (epoch ms) by their
     * leases, and the `createdAt` of the oldest queued one (`OpenCounts`), in one read of the
     * open executions.
     */
    readonly countOpen: (now: number) => Effect.Effect<OpenCounts, StorageError>
    /**
     * Cancels an execution no worker holds: replaces it with `record` (its failed form) and
     * records `outbox` in the same atomic write, only while it is still `queued` with no live
     * lease at `now`. False, writing nothing, when that no longer holds.
     */
    readonly cancelQueued: (
      record: ExecutionRecord,
      now: number,
      outbox?: OutboxEntry
    ) => Effect.Effect<boolean, StorageError>
    /**
     * Marks a `queued` or `running` execution as to be canceled by the worker that holds it
     * (`ExecutionQueue.cancelRequested`). False when it is finished.
     */
    readonly requestCancel: (executionId: ExecutionId, at: number) => Effect.Effect<boolean, StorageError>
  }
>() {}

/** The store's `saveAll` when it has one and its `save` is the one `saveAll` stands for. */
export const saveAllOf = (store: ExecutionStore["Type"]): SaveAll | undefined =>
  store.saveAll !== undefined && store.saveAll.save === store.save ? store.saveAll : undefined

/**
 * Makes a `saveAll` that stands for `save` from `write`, which writes the saves in one write and
 * answers, for each in order, whether its lease was current (and so it was written), or the
 * `StorageError` of that save alone; a failure of `write` is every save's.
 */
export const makeSaveAll = (
  save: ExecutionStore["Type"]["save"],
  write: (saves: ReadonlyArray<Save>) => Effect.Effect<ReadonlyArray<boolean | StorageError>, StorageError>
): SaveAll =>
  Object.assign(
    (saves: ReadonlyArray<Save>) =>
      Effect.match(write(saves), {
        onFailure: (error) => saves.map(() => Either.left(error)),
        onSuccess: (held) =>
          held.map((answer, i) =>
            answer === true
              ? Either.void
              : Either.left(
                answer === false ? new LeaseLost({ executionId: saves[i]!.record.executionId }) : answer
              )
          )
      }),
    { save }
  )
