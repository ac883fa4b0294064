/**
 * The apps with unfinished executions as the operator views show them
 * (docs/operations.md#operator-views): per app, its queued and running executions of every
 * workspace (`OperatorViews.appLoad`, counted in the database by their leases: running under a
 * live lease, queued under none), its limit (`concurrency` of its current version), the node types
 * of that version, and what its queued executions wait for: a worker for their node types when no
 * live worker runs them all (`Routing.waitingFor` over the live processes, as a poll answer says),
 * else the app's limit when its running executions reach it (the live leases its claims count).
 */
import type { AppId, WorkspaceId } from "@appexec/api/Ids"
import { Clock, Effect, Option } from "effect"
import { AppStore } from "./AppStore.js"
import type { StorageError } from "./Errors.js"
import * as WaitingFor from "./internal/facade/WaitingFor.js"
import { type AppLoad, OperatorViews } from "./OperatorViews.js"
import * as Routing from "./Routing.js"

/** An app with queued or running executions. */
export interface AppQueue {
  readonly appId: AppId
  /** Its name; null when the app is not stored any more. */
  readonly name: string | null
  /** The workspace that owns it; null for a public app. */
  readonly workspaceId: WorkspaceId | null
  /** Its unfinished executions under no live lease: never claimed, handed back, or their lease ran out. */
  readonly queued: number
  /** Its unfinished executions under a live lease. */
  readonly running: number
  /** The most of its executions that run at once (`concurrency` of its current version); null: no limit. */
  readonly concurrency: number | null
  /** The node types of its current version, sorted. */
  readonly nodeTypes: ReadonlyArray<string>
  /** Why its queued executions wait, when a live worker could not take them now; else null. */
  readonly waitingFor: string | null
}

/** The read of the apps with unfinished executions, ordered by app id. */
export const make: Effect.Effect<
  Effect.Effect<ReadonlyArray<AppQueue>, StorageError>,
  never,
  OperatorViews | AppStore
> = Effect.gen(function*() {
  const views = yield* OperatorViews
  const apps = yield* AppStore
  const waitingFor = yield* WaitingFor.make

  const queueOf = (versions: ReadonlyArray<AppLoad>) =>
    Effect.gen(function*() {
      const { appId } = versions[0]!
      const app = yield* apps.get(appId)
      const current = Option.isNone(app) ? Option.none() : yield* apps.getVersion(app.value.workflowId)
      const definition = Option.map(current, (version) => version.definition)
      const queued = versions.reduce((sum, version) => sum + version.queued, 0)
      const running = versions.reduce((sum, version) => sum + version.running, 0)
      const concurrency = Option.match(definition, { onNone: () => null, onSome: (d) => d.concurrency ?? null })
      const reasons = new Set<string>()
      for (const version of versions) {
        if (version.queued === 0) continue
        const reason = yield* waitingFor(version.workflowId)
        if (reason !== undefined) reasons.add(reason)
      }
      if (reasons.size === 0 && queued > 0 && concurrency !== null && running >= concurrency) {
        reasons.add(WaitingFor.appLimitReason(concurrency))
      }
      return {
        appId,
        name: Option.match(app, { onNone: () => null, onSome: (a) => a.name }),
        workspaceId: Option.match(app, { onNone: () => null, onSome: (a) => a.workspaceId }),
        queued,
        running,
        concurrency,
        nodeTypes: Option.match(definition, { onNone: () => [], onSome: Routing.nodeTypesOf }),
        waitingFor: reasons.size === 0 ? null : [...reasons].join("; ")
      } satisfies AppQueue
    })

  return Effect.gen(function*() {
    const byApp = new Map<string, Array<AppLoad>>()
    for (const row of yield* views.appLoad(yield* Clock.currentTimeMillis)) {
      const versions = byApp.get(row.appId)
      if (versions === undefined) byApp.set(row.appId, [row])
      else versions.push(row)
    }
    return yield* Effect.forEach(byApp.values(), queueOf, { concurrency: 4 })
  })
})
