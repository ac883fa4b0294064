/**
 * In-memory `AppStore`.
 */
import { AppStore } from "@appexec/core"
import { Effect, Layer, Option } from "effect"

const byNameThenId = (a: AppStore.AppRecord, b: AppStore.AppRecord) =>
  a.name < b.name ? -1 : a.name > b.name ? 1 : a.appId < b.appId ? -1 : a.appId > b.appId ? 1 : 0

const fold = (s: string) => s.toLowerCase()

/** A fresh, empty app store. */
export const make = Effect.sync(() => {
  const apps = new Map<string, AppStore.AppRecord>()
  const versions = new Map<string, AppStore.WorkflowVersion>()
  const matches = (app: AppStore.AppRecord, search: string | undefined) => {
    if (search === undefined) return true
    const needle = fold(search)
    return fold(app.name).includes(needle) || fold(app.description ?? "").includes(needle)
  }
  const service: AppStore.AppStore["Type"] = {
    save: (app, version) =>
      Effect.sync(() => {
        apps.set(app.appId, app)
        if (!versions.has(version.workflowId)) versions.set(version.workflowId, version)
      }),
    get: (appId) => Effect.sync(() => Option.fromNullable(apps.get(appId))),
    findByName: (workspaceId, name) =>
      Effect.sync(() =>
        Option.fromNullable([...apps.values()].find((a) => a.workspaceId === workspaceId && a.name === name))
      ),
    getVersion: (workflowId) => Effect.sync(() => Option.fromNullable(versions.get(workflowId))),
    list: ({ workspaceId, search, publicLimit }) =>
      Effect.sync(() => {
        const visible = [...apps.values()].filter((a) => matches(a, search)).sort(byNameThenId)
        return {
          workspace: visible.filter((a) => workspaceId !== null && a.workspaceId === workspaceId),
          public: visible
            .filter((a) => a.isPublic && (workspaceId === null || a.workspaceId !== workspaceId))
            .slice(0, publicLimit)
        }
      }),
    listAll: Effect.sync(() => [...apps.values()].sort(byNameThenId)),
    listVersions: Effect.sync(() => [...versions.values()].sort((a, b) => a.createdAt - b.createdAt))
  }
  return service
})

/** Layer of a fresh in-memory app store. */
export const layer = Layer.effect(AppStore.AppStore, make)
