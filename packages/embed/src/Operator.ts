/**
 * What the operator of an embedded instance manages, with Promises: the API keys that clients of
 * the mounted API present, and the secrets that node types read by name (docs/secrets.md).
 */
import type { WorkspaceId } from "@appexec/api/Ids"
import * as Core from "@appexec/core/Appexec"
import * as SecretStore from "@appexec/core/SecretStore"
import { Effect, Redacted } from "effect"
import { AppexecError } from "./AppexecError.js"
import type { Run } from "./internal/Runner.js"

/** An API key as listed: never the key itself. */
export interface KeyInfo {
  /** The key's id, which `revoke` takes. */
  readonly id: string
  /** The key's hint as the console shows it (`aex_Ab3d…x9Yz`); `revoke` takes it too. */
  readonly hint: string
  readonly workspace: string
  readonly user: string
  readonly createdAt: Date
  /** When a request last presented it (to the minute); `null` when none has. */
  readonly lastUsedAt: Date | null
}

/** A key just made: `key` is shown this once (only its hash is stored). */
export interface CreatedKey extends KeyInfo {
  readonly key: string
}

/** The API keys of the instance. */
export interface Keys {
  /** Makes a key for a user (default `default`) of a workspace (default: the instance's), both made when missing. */
  create(options?: { readonly workspace?: string | undefined; readonly user?: string | undefined }): Promise<CreatedKey>
  /** The keys not revoked, of one workspace or of all, oldest first. */
  list(options?: { readonly workspace?: string | undefined }): Promise<ReadonlyArray<KeyInfo>>
  /** Revokes keys by id, by the whole key, or by hint as `list` shows it; resolves with how many were revoked. */
  revoke(idKeyOrHint: string): Promise<number>
}

/** A secret as listed: never its value. */
export interface SecretInfo {
  readonly name: string
  /** The id of the workspace it belongs to; `null` for the instance's own. */
  readonly workspaceId: string | null
  readonly updatedAt: Date
}

/** The secrets of the instance, sealed at rest with its master key. */
export interface Secrets {
  /**
   * Sets (or replaces) the secret `name` of the instance, or of one workspace (`{ workspace }`):
   * a node run in that workspace reads the workspace's before the instance's.
   */
  set(name: string, value: string, options?: { readonly workspace?: string | undefined }): Promise<void>
  /** Every secret's name and scope, never a value. */
  list(): Promise<ReadonlyArray<SecretInfo>>
  /** Deletes a secret; resolves with whether there was one. */
  delete(name: string, options?: { readonly workspace?: string | undefined }): Promise<boolean>
}

/** The instance's services the operator's parts use. */
export type Requirements = Core.Appexec | SecretStore.SecretStore

const dateOf = (millis: number) => new Date(millis)

/** The keys of the instance, `defaultWorkspace` where none is named. */
export const keys = (run: Run<Requirements>, defaultWorkspace: string): Keys => ({
  create: (options) =>
    run(
      Effect.flatMap(Core.Appexec, (appexec) =>
        appexec.keys.create({ workspace: options?.workspace ?? defaultWorkspace, user: options?.user }))
    ).then(
      ({ hint, key, record, user, workspace }) => ({
        key,
        id: record.apiKeyId,
        hint,
        workspace: workspace.name,
        user: user.name,
        createdAt: dateOf(record.createdAt),
        lastUsedAt: null
      })
    ),
  list: (options) =>
    run(Effect.flatMap(Core.Appexec, (appexec) => appexec.keys.list)).then((listed) =>
      listed
        .filter((key) => options?.workspace === undefined || key.workspace === options.workspace)
        .map((key) => ({
          id: key.apiKeyId,
          hint: key.hint,
          workspace: key.workspace,
          user: key.user,
          createdAt: dateOf(key.createdAt),
          lastUsedAt: key.lastUsedAt === null ? null : dateOf(key.lastUsedAt)
        }))
    ),
  revoke: (idOrHint) => run(Effect.flatMap(Core.Appexec, (appexec) => appexec.keys.revoke(idOrHint)))
})

/** The scope of a secret: the instance's, or the workspace named (made when missing). */
const scopeOf = (workspace: string | undefined) =>
  workspace === undefined
    ? Effect.succeed<WorkspaceId | undefined>(undefined)
    : Effect.flatMap(Core.Appexec, (appexec) => appexec.workspaces.create(workspace)).pipe(
      Effect.map((record) => record.workspaceId)
    )

/** The secrets of the instance. */
export const secrets = (run: Run<Requirements>): Secrets => ({
  set: (name, value, options) => {
    const problem = SecretStore.problemOf(name, Redacted.make(value))
    if (problem !== undefined) return Promise.reject(new AppexecError("invalid_request", problem))
    return run(
      Effect.flatMap(
        scopeOf(options?.workspace),
        (scope) => Effect.flatMap(SecretStore.SecretStore, (store) => store.set(name, Redacted.make(value), scope))
      )
    )
  },
  list: () =>
    run(Effect.flatMap(SecretStore.SecretStore, (store) => store.list)).then((entries) =>
      entries.map((entry) => ({
        name: entry.name,
        workspaceId: entry.workspaceId ?? null,
        updatedAt: dateOf(entry.updatedAt)
      }))
    ),
  delete: (name, options) =>
    run(
      Effect.flatMap(
        scopeOf(options?.workspace),
        (scope) => Effect.flatMap(SecretStore.SecretStore, (store) => store.delete(name, scope))
      )
    )
})
