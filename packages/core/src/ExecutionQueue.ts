/**
 * Port: the work queue over accepted executions, with leases.
 *
 * An execution is claimable when it is `queued`, or `running` with no live lease (its worker
 * was lost or released it). Claims take workspaces in turn (round robin over the workspaces that
 * have claimable work, in workspace-id order, resuming where the queue's previous claim stopped),
 * and within a workspace go oldest first, so one workspace's backlog never starves another's. A claim holds a lease until `expiresAt`;
 * the holder renews it while it works. Each claim has a new `token`, so a worker whose lease
 * expired and was claimed again can no longer write (`ExecutionStore.save` is fenced by it).
 */
import type { ExecutionId } from "@appexec/api/Ids"
import { Context, Effect, Option } from "effect"
import type { LeaseLost, StorageError } from "./Errors.js"
import type { ExecutionRecord } from "./ExecutionRecord.js"

/** The right to run one execution until `expiresAt` (epoch ms). */
export interface Lease {
  readonly executionId: ExecutionId
  readonly workerId: string
  /** Distinct for every claim of the same execution. */
  readonly token: number
  /**
   * How many times the execution was claimed, this claim included: what its `attempt` shows. A
   * claim given back (`release`) counts here too, so a run handed back shows the next attempt.
   */
  readonly attempt: number
  /**
   * The claims `maxAttempts` bounds: every claim of the execution but those given back
   * (`release`), this one included. A worker that stops cleanly costs the execution no attempt.
   */
  readonly counted: number
  readonly expiresAt: number
}

/** A claimed execution and its lease. */
export interface Claim {
  /**
   * The execution as stored, its lease aside: `queued`, or `running` when an earlier claim's run
   * wrote its start. A claim writes the lease alone; the run writes the start (core's `WorkerRun`).
   */
  readonly execution: ExecutionRecord
  readonly lease: Lease
}

/** How many executions one claim may take. */
export interface ClaimOptions {
  /** Most executions to claim at once. */
  readonly limit: number
  /**
   * Claim nothing more of a workspace that already has this many executions under live leases
   * (in every process on the store); no cap when absent.
   */
  readonly maxRunningPerWorkspace?: number | undefined
  /**
   * Caps by workspace id that replace `maxRunningPerWorkspace` for those workspaces
   * (`appexec workspaces set NAME --max-running N`).
   */
  readonly workspaceLimits?: ReadonlyMap<string, number> | undefined
  /**
   * Caps by app id: claim nothing more of an app that already has this many executions under
   * live leases (the app definition's `concurrency`). A claim skips a capped app's executions and
   * takes the next of its workspace, so one busy app never holds back the others.
   */
  readonly appLimits?: ReadonlyMap<string, number> | undefined
  /**
   * Claim only executions of these workflow versions (those whose every node type the claiming
   * worker runs: `--node-types`); every version when absent.
   */
  readonly workflows?: ReadonlyArray<string> | undefined
  /**
   * Caps on named resources: at most `max` executions of the workflow versions `workflows` under
   * live leases (those whose nodes use the resource, such as `provider.comfyui`'s servers).
   */
  readonly resourceLimits?: ReadonlyArray<ResourceCap> | undefined
}

/** A cap on the executions of some workflow versions that share a resource. */
export interface ResourceCap {
  readonly resource: string
  readonly max: number
  readonly workflows: ReadonlyArray<string>
}

/** Whether a claim under `options` must count live leases (a cap of any kind applies). */
export const isCapped = (options: Omit<ClaimOptions, "limit">): boolean =>
  options.maxRunningPerWorkspace !== undefined ||
  (options.workspaceLimits !== undefined && options.workspaceLimits.size > 0) ||
  (options.appLimits !== undefined && options.appLimits.size > 0) ||
  (options.resourceLimits !== undefined && options.resourceLimits.length > 0)

/** The cap of `workspaceId` under `options`; undefined: none. */
export const workspaceCap = (options: Omit<ClaimOptions, "limit">, workspaceId: string): number | undefined =>
  options.workspaceLimits?.get(workspaceId) ?? options.maxRunningPerWorkspace

/** The queue of executions. Time is read from `Clock`. */
export class ExecutionQueue extends Context.Tag("@appexec/core/ExecutionQueue")<
  ExecutionQueue,
  {
    /**
     * Atomically claims up to `options.limit` claimable executions for `leaseMs` under one write,
     * workspaces in turn, each workspace under its cap; empty when nothing is claimable.
     */
    readonly claimBatch: (
      workerId: string,
      leaseMs: number,
      options: ClaimOptions
    ) => Effect.Effect<ReadonlyArray<Claim>, StorageError>
    /** Extends a lease that is still current to now + `leaseMs`; `LeaseLost` when it is not. */
    readonly renew: (lease: Lease, leaseMs: number) => Effect.Effect<Lease, LeaseLost | StorageError>
    /**
     * Extends every lease of `leases` that is still current to now + `leaseMs`, in one write, and
     * answers those renewed with their new `expiresAt`; a lease left out is lost (it ran out, or
     * the execution was claimed again). A worker renews all it holds at once.
     */
    readonly renewAll: (
      leases: ReadonlyArray<Lease>,
      leaseMs: number
    ) => Effect.Effect<ReadonlyArray<Lease>, StorageError>
    /**
     * Gives a current lease back: its claim stays in `attempt` but leaves `counted`; the execution
     * is claimable at once.
     */
    readonly release: (lease: Lease) => Effect.Effect<void, StorageError>
    /**
     * The executions `workerId` holds a live lease on whose cancellation was requested
     * (`ExecutionStore.requestCancel`). Workers ask while they run something.
     */
    readonly cancelRequested: (workerId: string) => Effect.Effect<ReadonlyArray<ExecutionId>, StorageError>
    /**
     * Completes when work may have become claimable in this process (an insert or a release).
     * Workers race it with a poll interval, which covers work added by other processes.
     */
    readonly awaitWork: Effect.Effect<void>
  }
>() {}

/** Claims the next claimable execution for `leaseMs` (a claim of one); none when nothing is claimable. */
export const claimOne = (
  queue: ExecutionQueue["Type"],
  workerId: string,
  leaseMs: number
): Effect.Effect<Option.Option<Claim>, StorageError> =>
  Effect.map(queue.claimBatch(workerId, leaseMs, { limit: 1 }), (claims) => Option.fromNullable(claims[0]))

/** One count a capped claim reads before it takes anything: the live leases of an app, or of a resource's versions. */
export type CapCount =
  | { readonly _tag: "app"; readonly key: string; readonly appId: string; readonly max: number }
  | {
    readonly _tag: "resource"
    readonly key: string
    readonly workflows: ReadonlyArray<string>
    readonly max: number
  }

/**
 * The caps of one claim by app and by resource, for the adapters' claim loops: the counts to
 * read first (`counts`, then `start` with each), then `took` for each execution taken. An app or
 * a resource at its cap puts its executions in `fullApps` / `fullWorkflows`, which the claim's
 * query leaves out, so the next execution of the workspace is taken instead.
 */
export class ClaimCaps {
  readonly fullApps: Array<string> = []
  readonly fullWorkflows: Array<string> = []
  readonly counts: ReadonlyArray<CapCount>
  private readonly live = new Map<string, number>()
  private readonly byWorkflow = new Map<string, Array<CapCount & { readonly _tag: "resource" }>>()

  constructor(options: Omit<ClaimOptions, "limit">) {
    const counts: Array<CapCount> = []
    for (const [appId, max] of options.appLimits ?? []) counts.push({ _tag: "app", key: `app:${appId}`, appId, max })
    for (const cap of options.resourceLimits ?? []) {
      const count = {
        _tag: "resource",
        key: `resource:${cap.resource}`,
        workflows: cap.workflows,
        max: cap.max
      } as const
      counts.push(count)
      for (const workflow of cap.workflows) {
        const list = this.byWorkflow.get(workflow) ?? []
        list.push(count)
        this.byWorkflow.set(workflow, list)
      }
    }
    this.counts = counts
  }

  /** Whether the claim has caps of its own to keep (then its filter may change as it takes). */
  get any(): boolean {
    return this.counts.length > 0
  }

  /** The live leases `count` found as the claim began. */
  start(count: CapCount, n: number): void {
    this.live.set(count.key, n)
    if (n >= count.max) this.fill(count)
  }

  /** Counts an execution taken; whether the claim's filter changed (an app or a resource became full). */
  took(appId: string, workflowId: string): boolean {
    let changed = false
    const app = this.counts.find((c) => c._tag === "app" && c.appId === appId)
    for (const count of [...(app === undefined ? [] : [app]), ...(this.byWorkflow.get(workflowId) ?? [])]) {
      const n = (this.live.get(count.key) ?? 0) + 1
      this.live.set(count.key, n)
      if (n >= count.max) changed = this.fill(count) || changed
    }
    return changed
  }

  private fill(count: CapCount): boolean {
    if (count._tag === "app") {
      if (this.fullApps.includes(count.appId)) return false
      this.fullApps.push(count.appId)
    } else {
      this.fullWorkflows.push(...count.workflows.filter((w) => !this.fullWorkflows.includes(w)))
    }
    return true
  }
}
