/**
 * Port: where executions live. Writes after acceptance are fenced by the lease of the worker
 * that runs the execution (see `ExecutionQueue`).
 */
import type { ExecutionId } from "@appexec/api/Ids"
import { Context, type Effect, type Option } from "effect"
import type { LeaseLost, StorageError } from "./Errors.js"
import type { Lease } from "./ExecutionQueue.js"
import type { ExecutionRecord } from "./ExecutionRecord.js"
import type { OutboxEntry } from "./WebhookOutbox.js"

/** Storage of executions. */
export class ExecutionStore extends Context.Tag("@appexec/core/ExecutionStore")<
  ExecutionStore,
  {
    /** Durably records a queued execution; once this succeeds it is claimable from the queue. */
    readonly insert: (record: ExecutionRecord) => Effect.Effect<void, StorageError>
    /** The execution with this id, if any. */
    readonly get: (executionId: ExecutionId) => Effect.Effect<Option.Option<ExecutionRecord>, StorageError>
    /**
     * Which of `executionIds` are finished (`completed` or `failed`); unknown ids are left out. One
     * cheap look for many waiters at once, reading no record.
     */
    readonly finishedAmong: (
      executionIds: ReadonlyArray<ExecutionId>
    ) => Effect.Effect<ReadonlyArray<ExecutionId>, StorageError>
    /**
     * Replaces the execution while `lease` is still the current lease on it, else fails with
     * `LeaseLost` and writes nothing. When the record is terminal, the lease ends and `outbox`
     * (if any) is recorded in the same atomic write, so a finished execution never lacks its webhook.
     */
    readonly save: (
      record: ExecutionRecord,
      lease: Lease,
      outbox?: OutboxEntry
    ) => Effect.Effect<void, LeaseLost | StorageError>
  }
>() {}
