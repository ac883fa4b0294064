/**
 * Why a queued execution waits (`waitingFor` of the poll answer, docs/api.md#queue-position):
 * no live worker could run it — the node types of its workflow version against those of each
 * live worker of the deployment (`ProcessRegistry`, `Routing.waitingFor`) — or, when one could,
 * a limit its run would pass: its app's (`concurrency` of the app's current version) or its
 * workspace's (`workspaces set --max-running`, else `maxRunningPerWorkspace`), counted over the
 * deployment's running executions (`OperatorViews`: those under live leases, as a claim's caps
 * count them, so a run handed back holds no limit). The workers and the counts are read at most
 * once every `WORKERS_TTL_MS`; a version's node types never change and are kept. A deployment
 * whose processes say nothing of themselves (no registry, or no row) gets no answer, and neither
 * does a failed read: the field is a hint, never a reason to fail a poll.
 */
import { AppId, WorkflowId, WorkspaceId } from "@appexec/api/Ids"
import { Clock, Effect, Option } from "effect"
import { AppexecConfig } from "../../AppexecConfig.js"
import { AppStore } from "../../AppStore.js"
import type { StorageError } from "../../Errors.js"
import { KeyStore } from "../../KeyStore.js"
import { OperatorViews } from "../../OperatorViews.js"
import { isLive, ProcessRegistry } from "../../ProcessRegistry.js"
import * as Routing from "../../Routing.js"

/** How long the live workers' node types are kept. */
export const WORKERS_TTL_MS = 1_000
/** Most workflow versions whose node types are kept. */
const VERSIONS_KEPT = 1_000

/** The reason of a queued execution of `workflowId`, if no live worker could run it. */
export type WaitingFor = (workflowId: string) => Effect.Effect<string | undefined>

export const make: Effect.Effect<WaitingFor, never, AppStore> = Effect.gen(function*() {
  const apps = yield* AppStore
  const registry = yield* Effect.serviceOption(ProcessRegistry)
  const needs = new Map<string, ReadonlyArray<string>>()
  let workers: { readonly at: number; readonly sets: ReadonlyArray<ReadonlySet<string>> | undefined } | undefined

  const liveWorkers = (now: number) => {
    if (workers !== undefined && now - workers.at < WORKERS_TTL_MS) return Effect.succeed(workers.sets)
    if (Option.isNone(registry)) return Effect.succeed(undefined)
    return Effect.map(registry.value.list, (entries) => {
      const live = entries.filter((entry) => isLive(entry, now))
      const sets = live.length === 0
        ? undefined
        : live.flatMap((entry) => (entry.nodeTypes == null ? [] : [new Set(entry.nodeTypes)]))
      workers = { at: now, sets }
      return sets
    })
  }

  const needsOf = (workflowId: string) => {
    const known = needs.get(workflowId)
    if (known !== undefined) return Effect.succeed(known)
    return Effect.map(apps.getVersion(WorkflowId.make(workflowId, { disableValidation: true })), (version) => {
      const types = Option.isNone(version) ? [] : Routing.nodeTypesOf(version.value.definition)
      if (needs.size >= VERSIONS_KEPT) needs.delete(needs.keys().next().value!)
      needs.set(workflowId, types)
      return types
    })
  }

  return (workflowId) =>
    Effect.gen(function*() {
      const sets = yield* liveWorkers(yield* Clock.currentTimeMillis)
      if (sets === undefined) return undefined
      return Routing.waitingFor(yield* needsOf(workflowId), sets)
    }).pipe(Effect.orElseSucceed(() => undefined))
})

/** Ids read from storage, valid already. */
const trusted = { disableValidation: true } as const

/** The reason of an app's queue held back by its limit (`concurrency`), in a poll answer and in the operator views. */
export const appLimitReason = (concurrency: number): string => `the app's limit of ${concurrency} at once`

/** The execution a limit reason is asked for. */
export interface Queued {
  readonly workflowId: string
  readonly appId: string
  readonly workspaceId: string
}

/** The reason of a queued execution: a worker for its node types, else a limit it waits for. */
export type WaitingForAny = (execution: Queued) => Effect.Effect<string | undefined>

/**
 * What the limit reasons read, kept for `WORKERS_TTL_MS`: each app's and workspace's limit as
 * read, and the running executions per app and per workspace (under live leases at `at`), counted
 * only once some limit is set.
 */
interface Snapshot {
  readonly at: number
  readonly appLimits: Map<string, number | undefined>
  readonly workspaceLimits: Map<string, number | undefined>
  running:
    | { readonly apps: ReadonlyMap<string, number>; readonly workspaces: ReadonlyMap<string, number> }
    | undefined
}

/**
 * The reasons of `make`, then the limits. A poll of a queued execution reads its app's and its
 * workspace's limit at most once every `WORKERS_TTL_MS` each, and the running executions (two
 * grouped counts) only when one of them is set, at most as often. Built once per instance: the
 * poll answers and the event streams share it.
 */
export const makeWithLimits: Effect.Effect<
  WaitingForAny,
  never,
  AppStore | AppexecConfig | KeyStore | OperatorViews
> = Effect.gen(function*() {
  const worker = yield* make
  const config = yield* AppexecConfig
  const apps = yield* AppStore
  const keys = yield* KeyStore
  const views = yield* OperatorViews
  let snapshot: Snapshot | undefined

  const snapshotAt = (now: number): Snapshot => {
    if (snapshot === undefined || now - snapshot.at >= WORKERS_TTL_MS) {
      snapshot = { at: now, appLimits: new Map(), workspaceLimits: new Map(), running: undefined }
    }
    return snapshot
  }

  /** The app's limit, from its current version. */
  const appLimit = (appId: string) =>
    Effect.flatMap(apps.get(AppId.make(appId, trusted)), (app) =>
      Option.isNone(app)
        ? Effect.succeed(undefined)
        : Effect.map(
          apps.getVersion(app.value.workflowId),
          (version) => Option.getOrUndefined(version)?.definition.concurrency
        ))

  /** The workspace's limit: its own, else the instance's. */
  const workspaceLimit = (workspaceId: string) =>
    Effect.map(keys.getWorkspace(WorkspaceId.make(workspaceId, trusted)), (workspace) => {
      const own = Option.getOrUndefined(workspace)?.maxRunning
      return typeof own === "number" ? own : config.maxRunningPerWorkspace
    })

  /** `read(id)`, kept in `kept` for the snapshot's time. */
  const memo = <A>(kept: Map<string, A>, id: string, read: (id: string) => Effect.Effect<A, StorageError>) =>
    kept.has(id) ? Effect.succeed(kept.get(id) as A) : Effect.tap(read(id), (value) => kept.set(id, value))

  const runningOf = (current: Snapshot) =>
    current.running !== undefined
      ? Effect.succeed(current.running)
      : Effect.zipWith(views.appLoad(current.at), views.workspaceLoad(current.at), (appLoad, workspaceLoad) => {
        const byApp = new Map<string, number>()
        for (const row of appLoad) byApp.set(row.appId, (byApp.get(row.appId) ?? 0) + row.running)
        const running = {
          apps: byApp,
          workspaces: new Map(workspaceLoad.map((row) => [row.workspaceId as string, row.running]))
        }
        current.running = running
        return running
      })

  const limit = (execution: Queued) =>
    Effect.gen(function*() {
      const current = snapshotAt(yield* Clock.currentTimeMillis)
      const ofApp = yield* memo(current.appLimits, execution.appId, appLimit)
      const ofWorkspace = yield* memo(current.workspaceLimits, execution.workspaceId, workspaceLimit)
      if (ofApp === undefined && ofWorkspace === undefined) return undefined
      const running = yield* runningOf(current)
      if (ofApp !== undefined && (running.apps.get(execution.appId) ?? 0) >= ofApp) return appLimitReason(ofApp)
      if (ofWorkspace !== undefined && (running.workspaces.get(execution.workspaceId) ?? 0) >= ofWorkspace) {
        return `the workspace's limit of ${ofWorkspace} at once`
      }
      return undefined
    }).pipe(Effect.orElseSucceed(() => undefined))

  return (execution) =>
    Effect.flatMap(
      worker(execution.workflowId),
      (reason) => reason === undefined ? limit(execution) : Effect.succeed(reason)
    )
})
