/**
 * What a principal may see: the apps and executions of its workspace (and public apps), read by
 * id. Shared by the parts of the facade; another workspace's execution is not found, another
 * workspace's private app is denied (docs/api.md).
 */
import type { Authentication } from "@appexec/api"
import { AppId, ExecutionId } from "@appexec/api/Ids"
import { Effect, Option } from "effect"
import type { CompiledApp } from "../../AppDefinition.js"
import { type AppRecord, AppStore } from "../../AppStore.js"
import { AppAccessDenied, AppNotFound, ExecutionNotFound, type StorageError } from "../../Errors.js"
import type { ExecutionRecord } from "../../ExecutionRecord.js"
import { ExecutionStore } from "../../ExecutionStore.js"
import { AppCatalog } from "./AppCatalog.js"

type Principal = Authentication.Principal

/** `Schema.UUID`'s own pattern, tested directly: every read by id checks it first. */
const UUID_PATTERN = /^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$/

/** Whether an id is a UUID: anything else names nothing. */
export const isUuid = (id: string): boolean => UUID_PATTERN.test(id)

/** The reads of apps and executions as a principal may make them. */
export const make = Effect.gen(function*() {
  const appStore = yield* AppStore
  const executionStore = yield* ExecutionStore
  const catalog = yield* AppCatalog

  /** Whether the principal may see and start `app`: its own workspace's, or a public one. */
  const mayUse = (principal: Principal, app: AppRecord) => app.isPublic || app.workspaceId === principal.workspaceId

  /** The app, if the principal may see it: own or public; another workspace's private app is denied. */
  // Every start reads one: no generator.
  const visibleApp = (
    principal: Principal,
    appId: string
  ): Effect.Effect<AppRecord, AppNotFound | AppAccessDenied | StorageError> => {
    if (!isUuid(appId)) return Effect.fail(new AppNotFound({ appId }))
    return Effect.flatMap(appStore.get(AppId.make(appId, { disableValidation: true })), (
      app
    ): Effect.Effect<AppRecord, AppNotFound | AppAccessDenied> => {
      if (Option.isNone(app)) return Effect.fail(new AppNotFound({ appId }))
      if (!mayUse(principal, app.value)) return Effect.fail(new AppAccessDenied({ appId }))
      return Effect.succeed(app.value)
    })
  }

  /** A visible app with its compiled current workflow. */
  const visibleWorkflow = (
    principal: Principal,
    appId: string
  ): Effect.Effect<
    { readonly app: AppRecord; readonly compiled: CompiledApp },
    AppNotFound | AppAccessDenied | StorageError
  > =>
    Effect.flatMap(
      visibleApp(principal, appId),
      (app) => Effect.map(catalog.load(app.workflowId), ({ app: compiled }) => ({ app, compiled }))
    )

  /**
   * A visible app with its compiled current workflow, as the app cache holds it (`AppStore.cached`)
   * with the app revision it was read under; none when the app is not cached.
   */
  const cachedWorkflow = (
    principal: Principal,
    appId: string
  ): Effect.Effect<
    { readonly app: AppRecord; readonly compiled: CompiledApp; readonly revision: number } | undefined,
    AppNotFound | AppAccessDenied | StorageError
  > => {
    if (!isUuid(appId)) return Effect.fail(new AppNotFound({ appId }))
    const found = appStore.cached?.(AppId.make(appId, { disableValidation: true }))
    if (found === undefined) return Effect.succeed(undefined)
    const { app, revision } = found
    if (!mayUse(principal, app)) return Effect.fail(new AppAccessDenied({ appId }))
    return Effect.map(catalog.load(app.workflowId), ({ app: compiled }) => ({ app, compiled, revision }))
  }

  /** An execution of the principal's workspace, or of any workspace without a principal (an operator). */
  const visibleExecution = (
    executionId: string,
    principal?: Principal
  ): Effect.Effect<ExecutionRecord, ExecutionNotFound | StorageError> => {
    if (!isUuid(executionId)) return Effect.fail(new ExecutionNotFound({ executionId }))
    // Checked just above: the id is a UUID.
    const id = ExecutionId.make(executionId, { disableValidation: true })
    return Effect.flatMap(
      executionStore.get(id),
      (record) =>
        Option.isNone(record) || (principal !== undefined && record.value.workspaceId !== principal.workspaceId)
          ? Effect.fail(new ExecutionNotFound({ executionId }))
          : Effect.succeed(record.value)
    )
  }

  return { visibleApp, visibleWorkflow, cachedWorkflow, visibleExecution } as const
})

/** The reads of `make`. */
export type Visibility = Effect.Effect.Success<typeof make>
