/**
 * Contract of `BlobStore`: bytes and content type round-trip, a put replaces, stored bytes do
 * not alias the caller's buffer.
 */
import { BlobStore } from "@appexec/core"
import { describe, expect } from "@effect/vitest"
import { Effect, Option } from "effect"
import { type MakeStorage, storageTest } from "../internal/StorageFixtures.js"

/** Runs the blob-store contract against fresh storage from `makeStorage` for every test. */
export const suite = (name: string, makeStorage: MakeStorage) =>
  describe(`BlobStore contract: ${name}`, () => {
    const test = storageTest(makeStorage)

    test(
      "a blob reads back byte for byte; a second put replaces it; a missing key is none",
      Effect.gen(function*() {
        const blobs = yield* BlobStore.BlobStore
        const bytes = Uint8Array.from([0, 1, 2, 255, 0, 128])
        yield* blobs.put("a/b.png", { contentType: "image/png", bytes })
        bytes[0] = 9
        expect(yield* blobs.get("a/b.png")).toEqual(
          Option.some({ contentType: "image/png", bytes: Uint8Array.from([0, 1, 2, 255, 0, 128]) })
        )
        yield* blobs.put("a/b.png", { contentType: "image/webp", bytes: Uint8Array.from([7]) })
        expect(yield* blobs.get("a/b.png")).toEqual(
          Option.some({ contentType: "image/webp", bytes: Uint8Array.from([7]) })
        )
        yield* blobs.put("empty", { contentType: "text/plain", bytes: new Uint8Array(0) })
        expect(yield* blobs.get("empty")).toEqual(Option.some({ contentType: "text/plain", bytes: new Uint8Array(0) }))
        expect(yield* blobs.get("missing")).toEqual(Option.none())
      })
    )

    test(
      "an execution's media are deleted under its prefix, and only those",
      Effect.gen(function*() {
        const blobs = yield* BlobStore.BlobStore
        const one = BlobStore.executionPrefix("00000000-0000-4000-8500-000000000001")
        const two = BlobStore.executionPrefix("00000000-0000-4000-8500-000000000002")
        const blob = { contentType: "image/png", bytes: Uint8Array.from([1, 2, 3]) }
        yield* blobs.put(`${one}a-out.png`, blob)
        yield* blobs.put(`${one}b-out.png`, blob)
        yield* blobs.put(`${two}a-out.png`, blob)
        yield* blobs.deleteUnder(one)
        expect(yield* blobs.get(`${one}a-out.png`)).toEqual(Option.none())
        expect(yield* blobs.get(`${one}b-out.png`)).toEqual(Option.none())
        expect(Option.isSome(yield* blobs.get(`${two}a-out.png`))).toBe(true)
        yield* blobs.deleteUnder(one)
      })
    )
  })
