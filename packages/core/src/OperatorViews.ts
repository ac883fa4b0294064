/**
 * Port: what the operator views of the admin port read across every workspace
 * (docs/operations.md#operator-views): how many executions each workspace and each app has queued and
 * running (by their leases: `WorkspaceLoad`), how many finished per minute and how many of them
 * failed, the workers that hold leases, the webhook deliveries that failed, and which process holds
 * the lease of a running execution.
 * Reads only, and never scoped to a workspace: the admin port is private to the operator.
 *
 * A lease names the process that holds it (`ProcessIdentity.processId`); the processes
 * themselves, idle ones too, are in their own registry (`ProcessRegistry`).
 */
import type { AppId, WorkflowId, WorkspaceId } from "@appexec/api/Ids"
import { Context, type Effect } from "effect"
import type { StorageError } from "./Errors.js"
import type { OutboxEntry } from "./WebhookOutbox.js"

/**
 * A workspace's unfinished executions (status `queued` or `running`), each counted by its lease:
 * `running` while it holds a live lease (one that ends after the `now` the view is read at), `queued`
 * otherwise — never claimed, handed back by a stopping worker (its status stays `running`), or its
 * lease ran out. So a claim whose start is not saved yet counts as running and a run nobody runs as
 * queued; `running` is what a claim's caps count (`ExecutionQueue.ClaimOptions`).
 */
export interface WorkspaceLoad {
  readonly workspaceId: WorkspaceId
  /** Its name; null where the storage does not hold workspaces beside executions (memory). */
  readonly name: string | null
  /** Its unfinished executions under no live lease: they wait for a worker. */
  readonly queued: number
  /** Its unfinished executions under a live lease: a worker runs them. */
  readonly running: number
}

/** The unfinished executions of one app's workflow version, of every workspace, counted as in `WorkspaceLoad`. */
export interface AppLoad {
  readonly appId: AppId
  /** The version they run (an app's queue may hold executions of an earlier version). */
  readonly workflowId: WorkflowId
  /** Those under no live lease. */
  readonly queued: number
  /** Those under a live lease. */
  readonly running: number
}

/** The executions that finished within one bucket of time. */
export interface FinishedBucket {
  /** The bucket's start (epoch ms): `since` plus a whole number of buckets. */
  readonly start: number
  readonly completed: number
  readonly failed: number
}

/** A worker as its leases show it. */
export interface LeaseHolder {
  readonly workerId: string
  /** How many unfinished executions it holds a lease on. */
  readonly held: number
  /** The latest end among those leases (epoch ms); in the past when the worker stopped renewing them. */
  readonly leaseExpiresAt: number
}

/** A delivery that is over and failed, with the execution's workspace and app. */
export interface FailedDelivery {
  readonly entry: OutboxEntry
  readonly workspaceId: WorkspaceId
  /** The workspace's name; null where the storage does not hold it (memory). */
  readonly workspaceName: string | null
  readonly appId: AppId
}

/** The reads of the operator views. */
export class OperatorViews extends Context.Tag("@appexec/core/OperatorViews")<
  OperatorViews,
  {
    /**
     * Every workspace with an unfinished execution, with how many are queued and how many run at
     * `now` (epoch ms) by their leases (`WorkspaceLoad`), ordered by workspace id.
     */
    readonly workspaceLoad: (now: number) => Effect.Effect<ReadonlyArray<WorkspaceLoad>, StorageError>
    /**
     * Every app and workflow version with an unfinished execution, with how many are queued and
     * how many run at `now` (epoch ms) by their leases (`AppLoad`), ordered by app id, then workflow id.
     */
    readonly appLoad: (now: number) => Effect.Effect<ReadonlyArray<AppLoad>, StorageError>
    /**
     * The executions that finished (`completedAt`) at or after `since` and before `until`, counted
     * by status in buckets of `bucketMs` (positive) from `since`: the buckets that hold any, oldest first.
     */
    readonly finishedPerBucket: (
      since: number,
      until: number,
      bucketMs: number
    ) => Effect.Effect<ReadonlyArray<FinishedBucket>, StorageError>
    /** The workers that hold a lease on an unfinished execution, ordered by worker id. */
    readonly leaseHolders: Effect.Effect<ReadonlyArray<LeaseHolder>, StorageError>
    /**
     * The process holding a lease that has not run out at `now` (epoch ms) on each of
     * `executionIds` that is unfinished, by execution id; the others are left out.
     */
    readonly holdersOf: (
      executionIds: ReadonlyArray<string>,
      now: number
    ) => Effect.Effect<ReadonlyMap<string, string>, StorageError>
    /**
     * Up to `limit` (positive) deliveries whose status is `failed` (retries given up, or a
     * redelivery that failed), across workspaces, newest (by creation) first.
     */
    readonly failedDeliveries: (limit: number) => Effect.Effect<ReadonlyArray<FailedDelivery>, StorageError>
  }
>() {}
