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
        workspaces.set(workspace.workspaceId, workspace)
        return workspace
      }),
    findWorkspace: (name) =>
      Effect.sync(() => Option.fromNullable([...workspaces.values()].find((w) => w.name === name))),
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
    listKeys: (workspaceId) =>
      Effect.sync(() =>
        [...keys.values()]
          .filter((key) => workspaceId === undefined || key.workspaceId === workspaceId)
          .sort((a, b) => a.createdAt - b.createdAt || (a.apiKeyId < b.apiKeyId ? -1 : 1))
          .map(({ hash: _hash, ...key }): KeyStore.ListedKey => ({
            ...key,
            workspaceName: workspaces.get(key.workspaceId)?.name ?? "",
            userName: users.get(key.userId)?.name ?? ""
          }))
      ),
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
    keyRevision: Effect.sync(() => revision)
  }
  return service
})

/** Layer of a fresh in-memory key store. */
export const layer = Layer.effect(KeyStore.KeyStore, make)
