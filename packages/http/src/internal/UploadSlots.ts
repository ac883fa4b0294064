/**
 * The uploads read at once (docs/http.md#request-bodies), counted in this process: at most
 * `perKey` for one API key and `perWorkspace` for one workspace, under a ceiling of `total` for the
 * whole process (which bounds the memory uploads hold: `total` × the largest upload). So one key,
 * or one workspace, that holds its uploads open leaves places to every other workspace. An upload
 * takes its place before its body is read and gives it back when it is answered, however it ends.
 */
import { Effect, Either } from "effect"

/** The caps. */
export interface Limits {
  /** Uploads one API key sends at once. */
  readonly perKey: number
  /** Uploads one workspace (all its keys) sends at once. */
  readonly perWorkspace: number
  /** Uploads the process reads at once, whoever sends them. */
  readonly total: number
}

/** The defaults: 4 per key, 8 per workspace, 16 in all (so uploads of 25 MiB hold at most 400 MiB). */
export const defaults: Limits = { perKey: 4, perWorkspace: 8, total: 16 }

/** Which cap an upload is over. */
export type Over = "key" | "workspace" | "total"

/** The places of every key and workspace. */
export interface UploadSlots {
  readonly limits: Limits
  /**
   * A place for one more upload of `keyId` in `workspaceId`, as the effect that gives it back
   * (once: running it again does nothing); or the cap it is over (the key's, checked first, then
   * the workspace's, then the process's).
   */
  readonly take: (keyId: string, workspaceId: string) => Effect.Effect<Either.Either<Effect.Effect<void>, Over>>
}

const add = (counts: Map<string, number>, id: string, by: number) => {
  const next = (counts.get(id) ?? 0) + by
  if (next <= 0) counts.delete(id)
  else counts.set(id, next)
}

/** No upload yet, at most `limits` (each at least 1). */
export const make = (limits: Limits): UploadSlots => {
  const caps: Limits = {
    perKey: Math.max(1, limits.perKey),
    perWorkspace: Math.max(1, limits.perWorkspace),
    total: Math.max(1, limits.total)
  }
  const byKey = new Map<string, number>()
  const byWorkspace = new Map<string, number>()
  let total = 0
  return {
    limits: caps,
    take: (keyId, workspaceId) =>
      Effect.sync(() => {
        if ((byKey.get(keyId) ?? 0) >= caps.perKey) return Either.left("key" as const)
        if ((byWorkspace.get(workspaceId) ?? 0) >= caps.perWorkspace) return Either.left("workspace" as const)
        if (total >= caps.total) return Either.left("total" as const)
        add(byKey, keyId, 1)
        add(byWorkspace, workspaceId, 1)
        total += 1
        let given = false
        return Either.right(Effect.sync(() => {
          if (given) return
          given = true
          add(byKey, keyId, -1)
          add(byWorkspace, workspaceId, -1)
          total -= 1
        }))
      })
  }
}
