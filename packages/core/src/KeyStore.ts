/**
 * Port: workspaces, their users and their API keys. Keys are stored only as a hash.
 */
import { ApiKeyId, UserId, WorkspaceId } from "@appexec/api/Ids"
import { Context, type Effect, type Option, Schema } from "effect"
import type { StorageError } from "./Errors.js"

/** A tenant. Names are unique. */
export const WorkspaceRecord = Schema.Struct({
  workspaceId: WorkspaceId,
  name: Schema.String,
  createdAt: Schema.Number,
  /**
   * Most of its executions running at once in every process (`appexec workspaces set NAME
   * --max-running N`); absent or null: the instance's `--max-running-per-workspace`, else none.
   * The stores leave it out while it is not set.
   */
  maxRunning: Schema.optional(Schema.NullOr(Schema.Int)),
  /**
   * Highest priority its keys may ask for at a start (`--max-priority N`); absent or null:
   * `PRIORITY_MAX`. The stores leave it out while it is not set.
   */
  maxPriority: Schema.optional(Schema.NullOr(Schema.Int))
})
export type WorkspaceRecord = typeof WorkspaceRecord.Type

/** A change of a workspace's limits: a field left out stays as it is, null puts back the default. */
export interface WorkspaceLimits {
  readonly maxRunning?: number | null | undefined
  readonly maxPriority?: number | null | undefined
}

/** A user of a workspace; names are unique within the workspace. */
export const UserRecord = Schema.Struct({
  userId: UserId,
  workspaceId: WorkspaceId,
  name: Schema.String,
  createdAt: Schema.Number
})
export type UserRecord = typeof UserRecord.Type

/** An API key as stored: its hash and a short non-secret hint, never the key. */
export const ApiKeyRecord = Schema.Struct({
  apiKeyId: ApiKeyId,
  workspaceId: WorkspaceId,
  userId: UserId,
  /** Hex SHA-256 of the whole key. */
  hash: Schema.String,
  /** The prefix and first characters of the key, to recognise it in listings. */
  hint: Schema.String,
  /**
   * The last characters of the key, shown after the hint (`aex_Twbo…myLI`); null for a key made
   * before they were kept and not used since.
   */
  hintTail: Schema.NullOr(Schema.String),
  createdAt: Schema.Number,
  revokedAt: Schema.NullOr(Schema.Number),
  /** When the key last authenticated a request, to the minute (`KeyStore.markUsed`); null when never. */
  lastUsedAt: Schema.NullOr(Schema.Number)
})
export type ApiKeyRecord = typeof ApiKeyRecord.Type

/** An active key as the operator lists it: its record, and the names of its workspace and user. */
export const KeyListing = Schema.Struct({
  key: ApiKeyRecord,
  workspace: Schema.String,
  user: Schema.String
})
export type KeyListing = typeof KeyListing.Type

/** A use of a key: its id, when, and the last characters of the key (kept where unknown). */
export const KeyUse = Schema.Struct({
  apiKeyId: ApiKeyId,
  at: Schema.Number,
  hintTail: Schema.String
})
export type KeyUse = typeof KeyUse.Type

/** Storage of workspaces, users and API keys. */
export class KeyStore extends Context.Tag("@appexec/core/KeyStore")<
  KeyStore,
  {
    /**
     * Inserts a workspace, without limits (`setWorkspaceLimits` sets them); returns the existing
     * one instead when the name is taken.
     */
    readonly ensureWorkspace: (workspace: WorkspaceRecord) => Effect.Effect<WorkspaceRecord, StorageError>
    /** The workspace with this name, if any. */
    readonly findWorkspace: (name: string) => Effect.Effect<Option.Option<WorkspaceRecord>, StorageError>
    /** The workspace with this id, if any. */
    readonly getWorkspace: (workspaceId: WorkspaceId) => Effect.Effect<Option.Option<WorkspaceRecord>, StorageError>
    /** Every workspace, oldest first. */
    readonly listWorkspaces: Effect.Effect<ReadonlyArray<WorkspaceRecord>, StorageError>
    /**
     * Sets the limits `limits` names on the workspace with this id (undefined: unchanged, null:
     * back to the default); false when no workspace has that id.
     */
    readonly setWorkspaceLimits: (
      workspaceId: WorkspaceId,
      limits: WorkspaceLimits
    ) => Effect.Effect<boolean, StorageError>
    /** Inserts a user; returns the existing one instead when the name is taken in that workspace. */
    readonly ensureUser: (user: UserRecord) => Effect.Effect<UserRecord, StorageError>
    /** Inserts an API key record. */
    readonly insertKey: (key: ApiKeyRecord) => Effect.Effect<void, StorageError>
    /** The key record with this hash, revoked or not. */
    readonly findKeyByHash: (hash: string) => Effect.Effect<Option.Option<ApiKeyRecord>, StorageError>
    /** Revokes the unrevoked keys whose id or hint equals `idOrHint`; returns how many. */
    readonly revokeKey: (idOrHint: string, at: number) => Effect.Effect<number, StorageError>
    /** The keys not revoked, with their workspace's and user's names, oldest first. */
    readonly listKeys: Effect.Effect<ReadonlyArray<KeyListing>, StorageError>
    /**
     * Records uses of keys: `lastUsedAt` moves forward to `at` (never back), and a key whose
     * `hintTail` is unknown gets the use's. Does not move the key revision: a key's validity is unchanged.
     */
    readonly markUsed: (uses: ReadonlyArray<KeyUse>) => Effect.Effect<void, StorageError>
    /**
     * A number that changes whenever a stored key changes (a revocation, by any process on the
     * same storage), read cheaply. A store that has one lets the facade keep authenticated keys
     * in memory: the cache is dropped as soon as the revision moves. Without it every request
     * looks its key up.
     */
    readonly keyRevision?: Effect.Effect<number, StorageError>
  }
>() {}
