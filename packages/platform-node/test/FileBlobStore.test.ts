import { BlobStore } from "@appexec/core"
import { MemoryStorage } from "@appexec/testing"
import { BlobStoreContract } from "@appexec/testing/contracts"
import { afterAll, describe, expect, it } from "@effect/vitest"
import { Effect, Layer, Option } from "effect"
import { mkdtempSync, rmSync } from "node:fs"
import { mkdtemp, readdir, readFile, rm } from "node:fs/promises"
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

describe("FileBlobStore under the contract", () => {
  const root = mkdtempSync(join(tmpdir(), "appexec-blobs-contract-"))
  afterAll(() => rmSync(root, { recursive: true, force: true }))
  BlobStoreContract.suite(
    "file system",
    () => Layer.merge(MemoryStorage.layer, FileBlobStore.layer(mkdtempSync(join(root, "blobs-"))))
  )
})
