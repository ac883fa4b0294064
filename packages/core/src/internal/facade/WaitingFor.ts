/**
 * Why a queued execution waits, when no live worker could run it (`waitingFor` of the poll answer,
 * docs/api.md#queue-position): the node types of its workflow version against those of each
 * live worker of the deployment (`ProcessRegistry`, `Routing.waitingFor`). The workers are read
 * at most once every `WORKERS_TTL_MS`; a version's node types never change and are kept. A
 * deployment whose processes say nothing of themselves (no registry, or no row) gets no answer,
 * and neither does a failed read: the field is a hint, never a reason to fail a poll.
 */
import { WorkflowId } from "@appexec/api/Ids"
import { Clock, Effect, Option } from "effect"
import { AppStore } from "../../AppStore.js"
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
