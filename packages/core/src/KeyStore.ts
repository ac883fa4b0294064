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
  createdAt: Schema.Number
})
export type WorkspaceRecord = typeof WorkspaceRecord.Type

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
  createdAt: Schema.Number,
  revokedAt: Schema.NullOr(Schema.Number)
})
export type ApiKeyRecord = typeof ApiKeyRecord.Type

/** An API key as listed: its record without the hash, with the names of its workspace and user. */
export const ListedKey = Schema.Struct({
  apiKeyId: ApiKeyId,
  workspaceId: WorkspaceId,
  workspaceName: Schema.String,
  userId: UserId,
  userName: Schema.String,
  hint: Schema.String,
  createdAt: Schema.Number,
  revokedAt: Schema.NullOr(Schema.Number)
})
export type ListedKey = typeof ListedKey.Type

/** Storage of workspaces, users and API keys. */
export class KeyStore extends Context.Tag("@appexec/core/KeyStore")<
  KeyStore,
  {
    /** Inserts a workspace; returns the existing one instead when the name is taken. */
    readonly ensureWorkspace: (workspace: WorkspaceRecord) => Effect.Effect<WorkspaceRecord, StorageError>
    /** The workspace with this name, if any. */
    readonly findWorkspace: (name: string) => Effect.Effect<Option.Option<WorkspaceRecord>, StorageError>
    /** Inserts a user; returns the existing one instead when the name is taken in that workspace. */
    readonly ensureUser: (user: UserRecord) => Effect.Effect<UserRecord, StorageError>
    /** Inserts an API key record. */
    readonly insertKey: (key: ApiKeyRecord) => Effect.Effect<void, StorageError>
    /** The key record with this hash, revoked or not. */
    readonly findKeyByHash: (hash: string) => Effect.Effect<Option.Option<ApiKeyRecord>, StorageError>
    /**
     * The keys of one workspace (or of every workspace), revoked ones included, oldest first
     * (then by id); never a hash.
     */
    readonly listKeys: (workspaceId?: WorkspaceId) => Effect.Effect<ReadonlyArray<ListedKey>, StorageError>
    /** Revokes the unrevoked keys whose id or hint equals `idOrHint`; returns how many. */
    readonly revokeKey: (idOrHint: string, at: number) => Effect.Effect<number, StorageError>
    /**
     * A number that changes whenever a stored key changes (a revocation, by any process on the
     * same storage), read cheaply. A store that has one lets the facade keep authenticated keys
     * in memory: the cache is dropped as soon as the revision moves. Without it every request
     * looks its key up.
     */
    readonly keyRevision?: Effect.Effect<number, StorageError>
  }
>() {}
