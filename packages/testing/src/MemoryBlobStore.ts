/**
 * In-memory `BlobStore`.
 */
import { BlobStore } from "@appexec/core"
import { Effect, Layer, Option } from "effect"

/** A fresh, empty blob store. */
export const make = Effect.sync((): BlobStore.BlobStore["Type"] => {
  const blobs = new Map<string, BlobStore.Blob>()
  return {
    put: (key, blob) =>
      Effect.sync(() => {
        blobs.set(key, { contentType: blob.contentType, bytes: Uint8Array.from(blob.bytes) })
      }),
    get: (key) => Effect.sync(() => Option.fromNullable(blobs.get(key))),
    deleteUnder: (prefix) =>
      Effect.sync(() => {
        for (const key of [...blobs.keys()]) if (key.startsWith(prefix)) blobs.delete(key)
      })
  }
})

/** Layer of a fresh in-memory blob store. */
export const layer = Layer.effect(BlobStore.BlobStore, make)
