/**
 * Moving media from one store to another (`appexec media migrate`, docs/media.md): each blob of
 * `from` is copied to `to` and, unless `keep`, deleted from `from` once `to` answers it with the
 * same size and type. Resumable: a blob `to` already holds with that size and type is not copied
 * again (only deleted from `from`), and one gone from `from` since the listing is passed over, so
 * a move stopped at any point (killed, a failed request) goes on where it stopped when run again,
 * and a blob leaves `from` only after `to` holds it whole. Keys, content types and bytes are kept:
 * a URL handed out before the move names the same blob after it.
 */
import { Data, Effect, Option, Stream } from "effect"
import * as BlobStore from "./BlobStore.js"
import { StorageError } from "./Errors.js"
import { canSweep } from "./MediaSweep.js"

/** What became of one blob of `from`. */
export type Moved = Data.TaggedEnum<{
  /** Copied to `to` (and deleted from `from` unless kept). */
  Copied: { readonly key: string; readonly size: number }
  /** `to` held it already (copied by an earlier run): not copied again. */
  Present: { readonly key: string; readonly size: number }
  /** Deleted from `from` after it was listed (by retention): nothing to move. */
  Gone: { readonly key: string }
}>

/** Constructors and matchers of `Moved`. */
export const Moved = Data.taggedEnum<Moved>()

/** How to move. */
export interface Options {
  /** Leave every blob in `from` as well (copy only). */
  readonly keep: boolean
  /** Blobs moved at once (default 4). */
  readonly concurrency?: number | undefined
}

/**
 * Moves every blob of `from` to `to`, one finding per blob listed. Fails with a `StorageError`
 * when `from` cannot list its blobs or delete one, when a store fails, or when a copy does not
 * read back from `to` as it was written (then `from` keeps the blob).
 */
export const move = (
  from: BlobStore.BlobStore["Type"],
  to: BlobStore.BlobStore["Type"],
  options: Options
): Stream.Stream<Moved, StorageError> => {
  if (!canSweep(from)) {
    return Stream.fail(
      new StorageError({ operation: "BlobStore.list", cause: "this store cannot list its blobs or delete one" })
    )
  }
  const moveOne = (entry: BlobStore.BlobEntry) =>
    Effect.gen(function*() {
      const key = entry.key
      const held = yield* BlobStore.stat(to, key)
      let moved: Moved
      if (Option.isSome(held) && held.value.size === entry.size) {
        // The type too: a copy is whole only when it answers as the original does.
        const source = yield* BlobStore.stat(from, key)
        if (Option.isNone(source)) return Moved.Gone({ key })
        moved = source.value.contentType === held.value.contentType && source.value.size === held.value.size
          ? Moved.Present({ key, size: entry.size })
          : yield* copy(key)
      } else {
        moved = yield* copy(key)
      }
      if (moved._tag !== "Gone" && !options.keep) yield* from.deleteKeys([key])
      return moved
    })

  const copy = (key: string) =>
    Effect.gen(function*() {
      const blob = yield* from.get(key)
      if (Option.isNone(blob)) return Moved.Gone({ key })
      yield* to.put(key, blob.value)
      const copied = yield* BlobStore.stat(to, key)
      if (
        Option.isNone(copied) || copied.value.size !== blob.value.bytes.length ||
        copied.value.contentType !== blob.value.contentType
      ) {
        return yield* new StorageError({
          operation: "BlobStore.move",
          cause: `the copy of '${key}' does not read back as written: it stays where it was`
        })
      }
      return Moved.Copied({ key, size: blob.value.bytes.length })
    })

  return from.list("").pipe(Stream.mapEffect(moveOne, { concurrency: options.concurrency ?? 4 }))
}
