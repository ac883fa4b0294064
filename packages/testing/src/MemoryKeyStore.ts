/**
 * In-memory `KeyStore`.
 */
import { KeyStore } from "@appexec/core"
import { Effect, Layer, Option } from "effect"

/** A fresh, empty key store. */
export const make = Effect.sync(() => {
  const workspaces = new Map<string, KeyStore.WorkspaceRecord>()
  const users = new Map<string, KeyStore.UserRecord>()
  const keys = new Map<string, KeyStore.ApiKeyRecord>()
  let revision = 0
  const service: KeyStore.KeyStore["Type"] = {
    ensureWorkspace: (workspace) =>
      Effect.sync(() => {
        const existing = [...workspaces.values()].find((w) => w.name === workspace.name)
        if (existing !== undefined) return existing
        // Without limits, as the SQL stores insert it.
        const { workspaceId, name, createdAt } = workspace
        const inserted = { workspaceId, name, createdAt }
        workspaces.set(workspaceId, inserted)
        return inserted
      }),
    findWorkspace: (name) =>
      Effect.sync(() => Option.fromNullable([...workspaces.values()].find((w) => w.name === name))),
    getWorkspace: (workspaceId) => Effect.sync(() => Option.fromNullable(workspaces.get(workspaceId))),
    listWorkspaces: Effect.sync(() => [...workspaces.values()].sort((a, b) => a.createdAt - b.createdAt)),
    setWorkspaceLimits: (workspaceId, limits) =>
      Effect.sync(() => {
        const workspace = workspaces.get(workspaceId)
        if (workspace === undefined) return false
        const { maxPriority, maxRunning, ...rest } = workspace
        const running = limits.maxRunning === undefined ? maxRunning : limits.maxRunning
        const priority = limits.maxPriority === undefined ? maxPriority : limits.maxPriority
        // Left out while unset, as the SQL stores read them back.
        workspaces.set(workspaceId, {
          ...rest,
          ...(running === null || running === undefined ? {} : { maxRunning: running }),
          ...(priority === null || priority === undefined ? {} : { maxPriority: priority })
        })
        return true
      }),
    ensureUser: (user) =>
      Effect.sync(() => {
        const existing = [...users.values()].find((u) => u.workspaceId === user.workspaceId && u.name === user.name)
        if (existing !== undefined) return existing
        users.set(user.userId, user)
        return user
      }),
    insertKey: (key) =>
      Effect.sync(() => {
        keys.set(key.hash, key)
      }),
    findKeyByHash: (hash) => Effect.sync(() => Option.fromNullable(keys.get(hash))),
    revokeKey: (idOrHint, at) =>
      Effect.sync(() => {
        let revoked = 0
        for (const [hash, key] of keys) {
          if (key.revokedAt === null && (key.apiKeyId === idOrHint || key.hint === idOrHint)) {
            keys.set(hash, { ...key, revokedAt: at })
            revoked++
            revision++
          }
        }
        return revoked
      }),
    listKeys: Effect.sync(() =>
      [...keys.values()]
        .filter((key) => key.revokedAt === null)
        .sort((a, b) => a.createdAt - b.createdAt)
        .map((key) => ({
          key,
          workspace: workspaces.get(key.workspaceId)?.name ?? key.workspaceId,
          user: users.get(key.userId)?.name ?? key.userId
        }))
    ),
    markUsed: (uses) =>
      Effect.sync(() => {
        for (const use of uses) {
          for (const [hash, key] of keys) {
            if (key.apiKeyId !== use.apiKeyId) continue
            keys.set(hash, {
              ...key,
              lastUsedAt: key.lastUsedAt === null ? use.at : Math.max(key.lastUsedAt, use.at),
              hintTail: key.hintTail ?? use.hintTail
            })
          }
        }
      }),
    keyRevision: Effect.sync(() => revision)
  }
  return service
})

/** Layer of a fresh in-memory key store. */
export const layer = Layer.effect(KeyStore.KeyStore, make)
