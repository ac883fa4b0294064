import { BlobStore, MediaSweep } from "@appexec/core"
import { MemoryStorage } from "@appexec/testing"
import { BlobStoreContract } from "@appexec/testing/contracts"
import { afterAll, describe, expect, it } from "@effect/vitest"
import { Chunk, Effect, Layer, Option, Stream, TestClock } from "effect"
import { mkdtempSync, rmSync } from "node:fs"
import { mkdir, mkdtemp, readdir, readFile, rm, utimes, writeFile } from "node:fs/promises"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { FileBlobStore } from "../src/index.js"

const tempDir = Effect.acquireRelease(
  Effect.promise(() => mkdtemp(join(tmpdir(), "appexec-blobs-"))),
  (dir) => Effect.promise(() => rm(dir, { recursive: true, force: true }))
)

describe("FileBlobStore", () => {
  it.scoped("stores, reads back, replaces, and reports missing blobs", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir
      const store = FileBlobStore.make(join(dir, "blobs"))
      expect(yield* store.get("executions/a/x.png")).toEqual(Option.none())
      const first = new Uint8Array([1, 2, 3])
      yield* store.put("executions/a/x.png", { contentType: "image/png", bytes: first })
      expect(yield* store.get("executions/a/x.png")).toEqual(Option.some({ contentType: "image/png", bytes: first }))
      yield* store.put("executions/a/x.png", { contentType: "image/webp", bytes: new Uint8Array([9]) })
      expect(yield* store.get("executions/a/x.png")).toEqual(
        Option.some({ contentType: "image/webp", bytes: new Uint8Array([9]) })
      )
      expect(yield* store.get("executions/a/y.png")).toEqual(Option.none())
    }))

  it.scoped("lays blobs out by key, so the directory can be published as it is, and leaves no temporary files", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir
      const store = yield* Effect.provide(BlobStore.BlobStore, FileBlobStore.layer(join(dir, "blobs")))
      yield* store.put("executions/e1/poster.png", { contentType: "image/png", bytes: new Uint8Array([1, 2]) })
      expect(
        new Uint8Array(yield* Effect.promise(() => readFile(join(dir, "blobs", "executions", "e1", "poster.png"))))
      ).toEqual(
        new Uint8Array([1, 2])
      )
      expect(yield* Effect.promise(() => readdir(join(dir, "blobs", "executions", "e1")))).toEqual(["poster.png"])
      const meta = JSON.parse(
        yield* Effect.promise(() =>
          readFile(join(dir, "blobs", ".meta", "executions", "e1", "poster.png.json"), "utf8")
        )
      )
      expect(meta).toEqual({ contentType: "image/png", size: 2 })
    }))

  it.scoped.each(["../../escape", "/etc/passwd", ".meta/x", "a//b", "a/../b", ""])(
    "refuses the key %j, which could reach outside the directory, writing nothing",
    (key) =>
      Effect.gen(function*() {
        const dir = yield* tempDir
        const store = FileBlobStore.make(join(dir, "blobs"))
        const error = yield* store.put(key, { contentType: "text/plain", bytes: new Uint8Array([1]) }).pipe(Effect.flip)
        expect(error._tag).toBe("StorageError")
        expect((yield* store.get(key).pipe(Effect.flip))._tag).toBe("StorageError")
        expect(yield* Effect.promise(() => readdir(dir))).toEqual([])
      })
  )

  it.scoped("a storage failure is a StorageError", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir
      const store = FileBlobStore.make(join(dir, "file-not-dir", "x"))
      yield* Effect.promise(() => import("node:fs/promises").then((fs) => fs.writeFile(join(dir, "file-not-dir"), "")))
      const error = yield* store.put("k", { contentType: "a/b", bytes: new Uint8Array() }).pipe(Effect.flip)
      expect(error._tag).toBe("StorageError")
    }))
})

describe("FileBlobStore listings and the orphan sweep", () => {
  it.scoped("a listing shows written blobs with their file's time, never a file being written", () =>
    Effect.gen(function*() {
      const dir = join(yield* tempDir, "blobs")
      const store = FileBlobStore.make(dir)
      yield* store.put("executions/e1/poster.png", { contentType: "image/png", bytes: new Uint8Array([1, 2]) })
      const written = new Date("2030-01-01T00:00:00Z")
      yield* Effect.promise(() => utimes(join(dir, "executions/e1/poster.png"), written, written))
      yield* Effect.promise(() => utimes(join(dir, ".meta/executions/e1/poster.png.json"), written, written))
      // A put under way: its bytes under a temporary name, then renamed, its metadata not yet written.
      yield* Effect.promise(async () => {
        await mkdir(join(dir, "executions/e2"), { recursive: true })
        await writeFile(join(dir, "executions/e2/clip.mp4.0123456789ab.tmp"), "partial")
        await writeFile(join(dir, "executions/e2/frame.png"), "no metadata yet")
      })
      const listed = Chunk.toArray(yield* Stream.runCollect(store.list!("")))
      expect(listed).toEqual([{ key: "executions/e1/poster.png", size: 2, modifiedAt: written.getTime() }])
      expect(Chunk.toArray(yield* Stream.runCollect(store.list!("executions/e2/")))).toEqual([])
      // A missing store lists nothing.
      expect(Chunk.size(yield* Stream.runCollect(FileBlobStore.make(join(dir, "none")).list!("")))).toBe(0)
    }))

  it.scoped("the sweep deletes a file no execution refers to and spares one written within its minimum age", () =>
    Effect.gen(function*() {
      const dir = join(yield* tempDir, "blobs")
      const store = FileBlobStore.make(dir)
      const now = Date.now()
      yield* TestClock.setTime(now)
      const orphan = "executions/00000000-0000-4000-8000-0000000000aa/a-out.png"
      const fresh = "executions/00000000-0000-4000-8000-0000000000bb/a-out.png"
      yield* store.put(orphan, { contentType: "image/png", bytes: new Uint8Array([1]) })
      yield* store.put(fresh, { contentType: "image/png", bytes: new Uint8Array([2]) })
      // The orphan was written two hours ago (an older prune left it); the other one just now.
      const old = new Date(now - 2 * 60 * 60 * 1000)
      for (const path of [orphan, `.meta/${orphan}.json`]) {
        yield* Effect.promise(() => utimes(join(dir, path), old, old))
      }
      const found = yield* Stream.runCollect(MediaSweep.sweep(store, { minAge: "1 hour", dryRun: false })).pipe(
        Effect.provide(MemoryStorage.layer)
      )
      expect(Chunk.toArray(found).map((f) => [f._tag, f.entry.key]).sort()).toEqual([["Fresh", fresh], [
        "Orphan",
        orphan
      ]])
      expect(yield* store.get(orphan)).toEqual(Option.none())
      expect(Option.isSome(yield* store.get(fresh))).toBe(true)
      expect(yield* Effect.promise(() => readdir(join(dir, ".meta/executions/00000000-0000-4000-8000-0000000000aa"))))
        .toEqual([])
    }))
})

describe("FileBlobStore under the contract", () => {
  const root = mkdtempSync(join(tmpdir(), "appexec-blobs-contract-"))
  afterAll(() => rmSync(root, { recursive: true, force: true }))
  BlobStoreContract.suite(
    "file system",
    () => Layer.merge(MemoryStorage.layer, FileBlobStore.layer(mkdtempSync(join(root, "blobs-"))))
  )
})
