/**
 * Contract of `BlobStore`: bytes and content type round-trip, a put replaces, stored bytes do
 * not alias the caller's buffer; `stat` and `getRange` (through the fallbacks of core's
 * `BlobStore`, so a store without them passes too) answer size, type, version and byte ranges.
 * `list` and `deleteKeys`, which moving media and sweeping orphans need, are required: every
 * adapter of appexec has them.
 */
import { BlobStore } from "@appexec/core"
import { describe, expect } from "@effect/vitest"
import { Chunk, Effect, Option, Stream } from "effect"
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
      "stat answers size, type and a version that a put changes; getRange answers the asked bytes, clamped",
      Effect.gen(function*() {
        const blobs = yield* BlobStore.BlobStore
        const bytes = Uint8Array.from({ length: 300_000 }, (_, i) => (i * 7 + (i >> 8)) % 256)
        yield* blobs.put("v/clip.mp4", { contentType: "video/mp4", bytes })
        const info = yield* BlobStore.stat(blobs, "v/clip.mp4")
        expect(Option.map(info, ({ contentType, size }) => ({ contentType, size }))).toEqual(
          Option.some({ contentType: "video/mp4", size: 300_000 })
        )
        const again = yield* BlobStore.stat(blobs, "v/clip.mp4")
        expect(Option.map(again, (i) => i.version)).toEqual(Option.map(info, (i) => i.version))
        const range = (start: number, end: number) =>
          Effect.map(BlobStore.getRange(blobs, "v/clip.mp4", start, end), Option.map((b) => Uint8Array.from(b)))
        expect(yield* range(0, 0)).toEqual(Option.some(bytes.slice(0, 1)))
        expect(yield* range(131_072, 131_072 + 65_535)).toEqual(Option.some(bytes.slice(131_072, 131_072 + 65_536)))
        expect(yield* range(299_990, 299_999)).toEqual(Option.some(bytes.slice(299_990)))
        expect(yield* range(299_990, 1_000_000)).toEqual(Option.some(bytes.slice(299_990)))
        expect(yield* range(300_000, 300_100)).toEqual(Option.some(new Uint8Array(0)))
        expect(yield* BlobStore.getRange(blobs, "v/missing.mp4", 0, 10)).toEqual(Option.none())
        expect(yield* BlobStore.stat(blobs, "v/missing.mp4")).toEqual(Option.none())

        // Same size, other bytes: the version changes, so a cached ETag no longer matches.
        yield* blobs.put("v/clip.mp4", { contentType: "video/mp4", bytes: bytes.map((b) => 255 - b) })
        const replaced = yield* BlobStore.stat(blobs, "v/clip.mp4")
        expect(Option.map(replaced, (i) => i.size)).toEqual(Option.some(300_000))
        expect(Option.map(replaced, (i) => i.version)).not.toEqual(Option.map(info, (i) => i.version))
        expect(yield* range(0, 2)).toEqual(Option.some(Uint8Array.from([255, 255 - 7, 255 - 14])))

        yield* blobs.put("v/empty.bin", { contentType: "application/octet-stream", bytes: new Uint8Array(0) })
        expect(Option.map(yield* BlobStore.stat(blobs, "v/empty.bin"), (i) => i.size)).toEqual(Option.some(0))
        // No range of an empty blob is asked: the media route answers 416 before reading (and
        // s3rver, unlike S3, resets the connection on one).
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

    test(
      "list shows every blob under a prefix once, with its size and time, across pages; deleteKeys deletes those keys only",
      Effect.gen(function*() {
        const blobs = yield* BlobStore.BlobStore
        if (blobs.list === undefined || blobs.deleteKeys === undefined) {
          return yield* Effect.dieMessage("the store has no list or deleteKeys")
        }
        const list = blobs.list
        const listed = (prefix: string) =>
          Effect.map(Stream.runCollect(list(prefix)), (entries) =>
            Chunk.toArray(entries).map((e) => ({ key: e.key, size: e.size })).sort((a, b) => (a.key < b.key ? -1 : 1)))
        const one = BlobStore.executionPrefix("00000000-0000-4000-8500-000000000001")
        const two = BlobStore.executionPrefix("00000000-0000-4000-8500-000000000002")
        // More than a page of every adapter that pages by 500 (SQL), in one directory (files).
        const many = Array.from({ length: 520 }, (_, i) =>
          `${two}p-${String(i).padStart(4, "0")}.png`)
        yield* Effect.forEach(many, (key) =>
          blobs.put(key, { contentType: "image/png", bytes: Uint8Array.from([1]) }), {
          concurrency: 8
        })
        yield* blobs.put(`${one}a-out.png`, { contentType: "image/png", bytes: Uint8Array.from([1, 2, 3]) })
        yield* blobs.put(`${one}b-out.webp`, { contentType: "image/webp", bytes: Uint8Array.from([4]) })
        yield* blobs.put("uploads/2030-01-01/w/u1", { contentType: "image/png", bytes: new Uint8Array(0) })

        expect(yield* listed(one)).toEqual([{ key: `${one}a-out.png`, size: 3 }, { key: `${one}b-out.webp`, size: 1 }])
        expect((yield* listed(two)).map((e) => e.key)).toEqual(many)
        const all = yield* listed("")
        expect(all.length).toBe(523)
        expect(new Set(all.map((e) => e.key)).size).toBe(523)
        expect(yield* listed("uploads/")).toEqual([{ key: "uploads/2030-01-01/w/u1", size: 0 }])
        // A prefix that ends inside a segment matches as text does.
        expect((yield* listed("executions/00000000-0000-4000-8500-00000000000")).length).toBe(522)
        expect(yield* listed("nothing/")).toEqual([])
        const first = Chunk.toArray(yield* Stream.runCollect(list(one)))[0]!
        expect(typeof first.modifiedAt).toBe("number")

        yield* blobs.deleteKeys([`${one}a-out.png`, `${one}missing.png`, ...many.slice(0, 510)])
        expect(yield* listed(one)).toEqual([{ key: `${one}b-out.webp`, size: 1 }])
        expect(yield* blobs.get(`${one}a-out.png`)).toEqual(Option.none())
        expect((yield* listed(two)).map((e) => e.key)).toEqual(many.slice(510))
        yield* blobs.deleteKeys([])
      }),
      60_000
    )
  })
