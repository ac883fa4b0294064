/**
 * Port: bytes of media produced by executions.
 */
import { sha256 } from "@noble/hashes/sha2.js"
import { Context, Effect, Encoding, Option, type Stream } from "effect"
import type { StorageError } from "./Errors.js"

/** A stored blob. */
export interface Blob {
  readonly contentType: string
  readonly bytes: Uint8Array
}

/** What a store knows of a blob without reading its bytes. */
export interface BlobInfo {
  readonly contentType: string
  /** Its length in bytes. */
  readonly size: number
  /**
   * A tag that changes whenever a put replaces the blob (a modification time, the bucket's
   * ETag, …), so that `key` and `version` together name one content: the media route derives
   * its `ETag` from them without hashing the bytes.
   */
  readonly version: string
}

/** A blob as a listing shows it, without its bytes. */
export interface BlobEntry {
  readonly key: string
  /** Its length in bytes. */
  readonly size: number
  /** When it was last written (epoch milliseconds, as the store keeps it: a bucket to the second). */
  readonly modifiedAt: number
}

/**
 * Storage of media bytes under opaque keys. `stat` and `getRange` are optional, so that an
 * embedder's store with `put`, `get` and `deleteUnder` alone still works: use the functions
 * `stat` and `getRange` of this module, which fall back on a whole `get` when a store lacks them.
 * `list` and `deleteKeys` are optional too: only moving media to another store and sweeping
 * orphans need them (docs/media.md), and say so of a store without them.
 */
export class BlobStore extends Context.Tag("@appexec/core/BlobStore")<
  BlobStore,
  {
    /** Stores (or replaces) the blob under `key`. */
    readonly put: (key: string, blob: Blob) => Effect.Effect<void, StorageError>
    /** The blob under `key`, if any. */
    readonly get: (key: string) => Effect.Effect<Option.Option<Blob>, StorageError>
    /** Size, content type and version of the blob under `key`, if any, without its bytes. */
    readonly stat?: (key: string) => Effect.Effect<Option.Option<BlobInfo>, StorageError>
    /**
     * The bytes `start` to `endInclusive` of the blob under `key` (the end clamped to its last
     * byte; empty when `start` is past it), if any.
     */
    readonly getRange?: (
      key: string,
      start: number,
      endInclusive: number
    ) => Effect.Effect<Option.Option<Uint8Array>, StorageError>
    /** Deletes every blob whose key starts with `prefix` (which ends with `/`); no blob is no error. */
    readonly deleteUnder: (prefix: string) => Effect.Effect<void, StorageError>
    /**
     * Every blob whose key starts with `prefix` (empty: every blob), each once, in no promised
     * order, read a page at a time; blobs deleted while the stream runs may or may not appear,
     * and a blob still being written does not.
     */
    readonly list?: (prefix: string) => Stream.Stream<BlobEntry, StorageError>
    /** Deletes the blobs under these keys (each a whole key, not a prefix); a missing one is no error. */
    readonly deleteKeys?: (keys: ReadonlyArray<string>) => Effect.Effect<void, StorageError>
  }
>() {}

/** The key prefix of an execution's media: its media are stored under `executions/<id>/`. */
export const executionPrefix = (executionId: string): string => `executions/${executionId}/`

/** The version of a blob read whole: a digest of its bytes (the fallback of `stat`). */
const digestVersion = (blob: Blob): string => Encoding.encodeBase64Url(sha256(blob.bytes)).slice(0, 27)

/** Size, content type and version of a blob read whole (what `stat` answers for a store without one). */
export const infoOf = (blob: Blob): BlobInfo => ({
  contentType: blob.contentType,
  size: blob.bytes.length,
  version: digestVersion(blob)
})

/** Size, content type and version of the blob under `key` in `store`: `store.stat`, or a whole `get`. */
export const stat = (
  store: BlobStore["Type"],
  key: string
): Effect.Effect<Option.Option<BlobInfo>, StorageError> =>
  store.stat !== undefined ? store.stat(key) : Effect.map(store.get(key), Option.map(infoOf))

/** The bytes `start` to `endInclusive` (clamped) of the blob under `key`: `store.getRange`, or a whole `get`. */
export const getRange = (
  store: BlobStore["Type"],
  key: string,
  start: number,
  endInclusive: number
): Effect.Effect<Option.Option<Uint8Array>, StorageError> =>
  store.getRange !== undefined
    ? store.getRange(key, start, endInclusive)
    : Effect.map(store.get(key), Option.map((blob) => blob.bytes.subarray(start, endInclusive + 1)))
