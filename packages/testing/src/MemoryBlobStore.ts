/**
 * In-memory `BlobStore`.
 */
import { BlobStore } from "@appexec/core"
import { Effect, Layer, Option } from "effect"

/** A fresh, empty blob store. */
export const make = Effect.sync((): BlobStore.BlobStore["Type"] => {
  const blobs = new Map<string, BlobStore.Blob & { readonly version: string }>()
  let puts = 0
  return {
    put: (key, blob) =>
      Effect.sync(() => {
        puts += 1
        blobs.set(key, { contentType: blob.contentType, bytes: Uint8Array.from(blob.bytes), version: String(puts) })
      }),
    get: (key) =>
      Effect.sync(() =>
        Option.map(Option.fromNullable(blobs.get(key)), ({ bytes, contentType }) => ({ contentType, bytes }))
      ),
    stat: (key) =>
      Effect.sync(() =>
        Option.map(
          Option.fromNullable(blobs.get(key)),
          ({ bytes, contentType, version }) => ({ contentType, size: bytes.length, version })
        )
      ),
    getRange: (key, start, endInclusive) =>
      Effect.sync(() =>
        Option.map(Option.fromNullable(blobs.get(key)), ({ bytes }) => bytes.slice(start, endInclusive + 1))
      ),
    deleteUnder: (prefix) =>
      Effect.sync(() => {
        for (const key of [...blobs.keys()]) if (key.startsWith(prefix)) blobs.delete(key)
      })
  }
})

/** Layer of a fresh in-memory blob store. */
export const layer = Layer.effect(BlobStore.BlobStore, make)
