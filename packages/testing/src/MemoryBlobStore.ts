/**
 * In-memory `BlobStore`, with every optional method (a listing is a snapshot taken when the
 * stream starts).
 */
import { BlobStore } from "@appexec/core"
import { Clock, Effect, Layer, Option, Stream } from "effect"

/** A fresh, empty blob store. */
export const make = Effect.sync((): BlobStore.BlobStore["Type"] => {
  const blobs = new Map<string, BlobStore.Blob & { readonly version: string; readonly modifiedAt: number }>()
  let puts = 0
  return {
    // The time of a put is the Clock's, so that tests age blobs with `TestClock`.
    put: (key, blob) =>
      Effect.map(Clock.currentTimeMillis, (modifiedAt) => {
        puts += 1
        blobs.set(key, {
          contentType: blob.contentType,
          bytes: Uint8Array.from(blob.bytes),
          version: String(puts),
          modifiedAt
        })
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
      }),
    list: (prefix) =>
      Stream.suspend(() =>
        Stream.fromIterable(
          [...blobs.entries()].flatMap(([key, blob]) =>
            key.startsWith(prefix) ? [{ key, size: blob.bytes.length, modifiedAt: blob.modifiedAt }] : []
          )
        )
      ),
    deleteKeys: (keys) =>
      Effect.sync(() => {
        for (const key of keys) blobs.delete(key)
      })
  }
})

/** Layer of a fresh in-memory blob store. */
export const layer = Layer.effect(BlobStore.BlobStore, make)
