/**
 * In-memory `SealedSecretStore`: rows in a map keyed by scope and name.
 */
import { SealedSecretStore } from "@appexec/core"
import { Effect, Layer } from "effect"

/** A fresh, empty store. */
export const make = Effect.sync((): SealedSecretStore.SealedSecretStore["Type"] => {
  const rows = new Map<string, SealedSecretStore.SealedSecret>()
  const key = (name: string, workspaceId: string | undefined) => `${workspaceId ?? ""}\u0000${name}`
  return {
    put: (secret) => Effect.sync(() => void rows.set(key(secret.name, secret.workspaceId), secret)),
    reseal: (name, workspaceId, expected, sealed) =>
      Effect.sync(() => {
        const row = rows.get(key(name, workspaceId))
        if (row === undefined || row.sealed !== expected) return false
        rows.set(key(name, workspaceId), { ...row, sealed })
        return true
      }),
    find: (name, workspaceId) =>
      Effect.sync(() =>
        [rows.get(key(name, workspaceId)), rows.get(key(name, undefined))].filter((r) => r !== undefined)
      ),
    list: Effect.sync(() => [...rows.values()]),
    delete: (name, workspaceId) => Effect.sync(() => rows.delete(key(name, workspaceId)))
  }
})

/** Layer of a fresh in-memory store. */
export const layer = Layer.effect(SealedSecretStore.SealedSecretStore, make)
