/**
 * Port: bytes of media produced by executions.
 */
import { Context, type Effect, type Option } from "effect"
import type { StorageError } from "./Errors.js"

/** A stored blob. */
export interface Blob {
  readonly contentType: string
  readonly bytes: Uint8Array
}

/** Storage of media bytes under opaque keys. */
export class BlobStore extends Context.Tag("@appexec/core/BlobStore")<
  BlobStore,
  {
    /** Stores (or replaces) the blob under `key`. */
    readonly put: (key: string, blob: Blob) => Effect.Effect<void, StorageError>
    /** The blob under `key`, if any. */
    readonly get: (key: string) => Effect.Effect<Option.Option<Blob>, StorageError>
    /** Deletes every blob whose key starts with `prefix` (which ends with `/`); no blob is no error. */
    readonly deleteUnder: (prefix: string) => Effect.Effect<void, StorageError>
  }
>() {}

/** The key prefix of an execution's media: its media are stored under `executions/<id>/`. */
export const executionPrefix = (executionId: string): string => `executions/${executionId}/`
