/**
 * What a worker's claims may take (`ExecutionQueue.ClaimOptions` beyond their size): the workflow
 * versions whose every node type it runs (`Routing`), the apps' caps (`concurrency` in their
 * definitions), the workspaces' caps and the named resources' (`Routing.NodeResources`). Read from
 * the stores at most once every `REFRESH_MS`, and at the next claim after an import or a limit
 * changed in this process (`changed`); a failed read keeps the last plan.
 */
import { Clock, Effect, Option } from "effect"
import { globalValue } from "effect/GlobalValue"
import { AppexecConfig } from "../../AppexecConfig.js"
import { AppStore } from "../../AppStore.js"
import type { ClaimOptions } from "../../ExecutionQueue.js"
import { KeyStore } from "../../KeyStore.js"
import { NodeRegistry } from "../../NodeRegistry.js"
import * as Routing from "../../Routing.js"

/** How long a plan is kept before the stores are read again. */
export const REFRESH_MS = 1_000

/**
 * Moved by every import of an app and every change of a workspace's limits made in this process
 * (`changed`): the plans of this process are read again at their next claim, so an app imported
 * here is routed and capped from its first execution on. A change made by another process is
 * heeded within `REFRESH_MS`.
 */
const epoch = globalValue(Symbol.for("@appexec/core/ClaimPlan/epoch"), () => ({ value: 0 }))

/** Says that apps or limits changed in this process: every plan is read again at its next claim. */
export const changed = (): void => {
  epoch.value += 1
}

/** The part of a claim's options the plan sets. */
export type Plan = Pick<
  ClaimOptions,
  "workflows" | "appLimits" | "workspaceLimits" | "maxRunningPerWorkspace" | "resourceLimits"
>

/** The plan of this process's worker, read again when it is older than `REFRESH_MS`. */
export const make = Effect.gen(function*() {
  const config = yield* AppexecConfig
  const apps = yield* AppStore
  const keys = yield* KeyStore
  const registry = yield* NodeRegistry
  const resources = Option.getOrElse(yield* Effect.serviceOption(Routing.NodeResources), () => [])
  const runs = new Set(Routing.runnable(registry.types, config.nodeTypes))
  const base: Plan = { maxRunningPerWorkspace: config.maxRunningPerWorkspace }
  let plan: Plan = base
  let readAt = Number.NEGATIVE_INFINITY
  let readEpoch = epoch.value

  const read = Effect.gen(function*() {
    const versions = yield* apps.listVersions
    const accepted = versions
      .filter((version) => Routing.missing(Routing.nodeTypesOf(version.definition), runs).length === 0)
      .map((version) => version.workflowId as string)
    // With patterns, always a list: a version made since the last read waits for the next rather
    // than going to a worker that may not run it.
    const workflows = config.nodeTypes === undefined && accepted.length === versions.length ? undefined : accepted
    const byId = new Map(versions.map((version) => [version.workflowId as string, version.definition]))
    const appLimits = new Map<string, number>()
    for (const app of yield* apps.listAll) {
      const concurrency = byId.get(app.workflowId)?.concurrency
      if (concurrency !== undefined) appLimits.set(app.appId, concurrency)
    }
    const workspaceLimits = new Map<string, number>()
    for (const workspace of yield* keys.listWorkspaces) {
      if (typeof workspace.maxRunning === "number") workspaceLimits.set(workspace.workspaceId, workspace.maxRunning)
    }
    // A resource caps the versions whose nodes use it (provider.comfyui: its servers' total capacity).
    const resourceLimits = resources.flatMap((resource) => {
      const using = versions.filter((version) =>
        version.definition.nodes.some((node) => node.type === resource.nodeType)
      )
      return using.length === 0
        ? []
        : [{ resource: resource.resource, max: resource.limit, workflows: using.map((v) => v.workflowId as string) }]
    })
    return { ...base, workflows, appLimits, workspaceLimits, resourceLimits } satisfies Plan
  })

  /** The plan in force, read again when due. */
  const current: Effect.Effect<Plan> = Effect.flatMap(Clock.currentTimeMillis, (now) => {
    if (now - readAt < REFRESH_MS && readEpoch === epoch.value) return Effect.succeed(plan)
    readAt = now
    readEpoch = epoch.value
    return read.pipe(
      Effect.tap((next) => {
        plan = next
      }),
      Effect.catchTag(
        "StorageError",
        (error) => Effect.as(Effect.logWarning("the claim plan could not be read; the last one stays", error), plan)
      )
    )
  })
  return {
    current,
    /** The node types this worker runs. */
    runs: runs as ReadonlySet<string>
  }
})
