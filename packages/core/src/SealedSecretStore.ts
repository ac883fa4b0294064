/**
 * Port: where the operator's secrets (`SecretStore`) are kept at rest, as rows that hold each
 * value already sealed (`SecretSealing`, under the master key). The storage adapters implement
 * this narrow face; `SecretStore.layer` seals and opens over it, so that no adapter ever sees a
 * value in the clear. A row is identified by its name and scope (the instance, or one workspace).
 */
import type { WorkspaceId } from "@appexec/api/Ids"
import { Context, type Effect } from "effect"
import type { StorageError } from "./Errors.js"

/** One stored secret: its name, its scope (`undefined`: the instance), its sealed value and when it was set. */
export interface SealedSecret {
  readonly name: string
  readonly workspaceId: WorkspaceId | undefined
  /** The value sealed for this name and scope (`SecretSealing`); kept byte for byte. */
  readonly sealed: string
  /** When it was last set, in milliseconds since the epoch. */
  readonly updatedAt: number
}

/** Storage of sealed operator secrets. */
export class SealedSecretStore extends Context.Tag("@appexec/core/SealedSecretStore")<
  SealedSecretStore,
  {
    /** Stores `secret`, replacing the row of its name and scope if there is one. */
    readonly put: (secret: SealedSecret) => Effect.Effect<void, StorageError>
    /**
     * Replaces the sealed value of the row of `name` and `workspaceId` with `sealed`, only while
     * it still holds `expected` (a value set meanwhile is kept); whether it did. `updatedAt` stays.
     */
    readonly reseal: (
      name: string,
      workspaceId: WorkspaceId | undefined,
      expected: string,
      sealed: string
    ) => Effect.Effect<boolean, StorageError>
    /** The rows of `name` that apply to `workspaceId`: the workspace's own and the instance's, in any order. */
    readonly find: (name: string, workspaceId: WorkspaceId) => Effect.Effect<ReadonlyArray<SealedSecret>, StorageError>
    /** Every row, in any order. */
    readonly list: Effect.Effect<ReadonlyArray<SealedSecret>, StorageError>
    /** Deletes the row of `name` and `workspaceId`; whether there was one. */
    readonly delete: (name: string, workspaceId: WorkspaceId | undefined) => Effect.Effect<boolean, StorageError>
  }
>() {}
