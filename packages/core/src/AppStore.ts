/**
 * Port: where apps and their workflow versions live.
 */
import { AppId, WorkflowId, WorkspaceId } from "@appexec/api/Ids"
import { Context, type Effect, type Option, Schema } from "effect"
import { AppDefinition } from "./AppDefinition.js"
import type { StorageError } from "./Errors.js"

/** An app as stored: its owner, visibility and current workflow version. */
export const AppRecord = Schema.Struct({
  appId: AppId,
  name: Schema.String,
  description: Schema.NullOr(Schema.String),
  isPublic: Schema.Boolean,
  /** The owning workspace; null for a public app of the operator. */
  workspaceId: Schema.NullOr(WorkspaceId),
  workflowId: WorkflowId,
  createdAt: Schema.Number,
  updatedAt: Schema.Number
})
export type AppRecord = typeof AppRecord.Type

/** One immutable version of an app's definition. */
export const WorkflowVersion = Schema.Struct({
  workflowId: WorkflowId,
  appId: AppId,
  /** The app definition as imported and decoded (node configs are checked by their node types on load). */
  definition: AppDefinition,
  createdAt: Schema.Number
})
export type WorkflowVersion = typeof WorkflowVersion.Type

/** What `list` returns: the workspace's apps (all of them) and up to `publicLimit` public apps. */
export interface AppListing {
  readonly workspace: ReadonlyArray<AppRecord>
  readonly public: ReadonlyArray<AppRecord>
}

/** Storage of apps and workflow versions. */
export class AppStore extends Context.Tag("@appexec/core/AppStore")<
  AppStore,
  {
    /** Inserts or replaces the app row and inserts the version unless a version with its id exists. */
    readonly save: (app: AppRecord, version: WorkflowVersion) => Effect.Effect<void, StorageError>
    /** The app with this id, if any. */
    readonly get: (appId: AppId) => Effect.Effect<Option.Option<AppRecord>, StorageError>
    /**
     * The app with this id as this process's cache holds it, with the app revision it was read
     * under, without reading the store; none when it is not cached. Only for a store whose
     * counted starts (`CountedStarts`) check that revision in the statement that inserts.
     */
    readonly cached?: ((appId: AppId) => { readonly app: AppRecord; readonly revision: number } | undefined) | undefined
    /** The app named exactly `name` owned by `workspaceId` (null: the public apps). */
    readonly findByName: (
      workspaceId: WorkspaceId | null,
      name: string
    ) => Effect.Effect<Option.Option<AppRecord>, StorageError>
    /** The workflow version with this id, if any. */
    readonly getVersion: (workflowId: WorkflowId) => Effect.Effect<Option.Option<WorkflowVersion>, StorageError>
    /**
     * Apps visible to a workspace: all of its own apps, and at most `publicLimit` public apps that
     * it does not own; each group ordered by name, then appId. `search`, when given, keeps apps
     * whose name or description contains it, ignoring case (`toLowerCase`, all of Unicode).
     */
    readonly list: (query: {
      readonly workspaceId: WorkspaceId | null
      readonly search: string | undefined
      readonly publicLimit: number
    }) => Effect.Effect<AppListing, StorageError>
    /** Every app, ordered by name, then appId (for operators). */
    readonly listAll: Effect.Effect<ReadonlyArray<AppRecord>, StorageError>
    /**
     * Every workflow version of every app, oldest first (workers read it to know which they can
     * run and what each app allows: docs/scaling.md#pools-and-limits).
     */
    readonly listVersions: Effect.Effect<ReadonlyArray<WorkflowVersion>, StorageError>
  }
>() {}
