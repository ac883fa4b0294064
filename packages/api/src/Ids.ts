/**
 * Branded identifiers. Every id that crosses the API is a UUID; the brand keeps an
 * `AppId` from being passed where an `ExecutionId` is expected.
 */
import { Schema } from "effect"

/** Identifier of an app (docs/api.md#app-summary). */
export const AppId = Schema.UUID.pipe(Schema.brand("AppId"))
export type AppId = typeof AppId.Type

/** Identifier of one workflow version of an app (docs/api.md#execution). */
export const WorkflowId = Schema.UUID.pipe(Schema.brand("WorkflowId"))
export type WorkflowId = typeof WorkflowId.Type

/** Identifier of an execution (docs/api.md#execution). */
export const ExecutionId = Schema.UUID.pipe(Schema.brand("ExecutionId"))
export type ExecutionId = typeof ExecutionId.Type

/** Identifier of a parameter; never used as an input key (docs/api.md#parameter). */
export const ParameterId = Schema.UUID.pipe(Schema.brand("ParameterId"))
export type ParameterId = typeof ParameterId.Type

/** Identifier of a workspace: the tenant that owns keys, private apps and executions. */
export const WorkspaceId = Schema.UUID.pipe(Schema.brand("WorkspaceId"))
export type WorkspaceId = typeof WorkspaceId.Type

/** Identifier of a user; carried by the webhook's user id header (docs/api.md#webhooks). */
export const UserId = Schema.UUID.pipe(Schema.brand("UserId"))
export type UserId = typeof UserId.Type

/** Identifier of an API key record (never the key itself). */
export const ApiKeyId = Schema.UUID.pipe(Schema.brand("ApiKeyId"))
export type ApiKeyId = typeof ApiKeyId.Type
