import { BlobStore } from "@appexec/core"
import { FileBlobStore } from "@appexec/nodes"
import { mkdtemp, readdir, rm } from "node:fs/promises"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Option } from "effect"

const tempDir = Effect.acquireRelease(
  Effect.promise(() => mkdtemp(join(tmpdir(), "appexec-blobs-"))),
  (dir) => Effect.promise(() => rm(dir, { recursive: true, force: true }))
)

describe("FileBlobStore", () => {
  it.scoped("stores, reads back, replaces, and reports missing blobs", () =>
    Effect.gen(function* () {
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

  it.scoped("names files by a hash of the key, so no key reaches outside the directory, and leaves no temporary files", () =>
    Effect.gen(function* () {
      const dir = yield* tempDir
      const store = yield* Effect.provide(BlobStore.BlobStore, FileBlobStore.layer(join(dir, "blobs")))
      yield* store.put("../../escape", { contentType: "text/plain", bytes: new Uint8Array([1]) })
      expect(yield* Effect.promise(() => readdir(dir))).toEqual(["blobs"])
      const shards = yield* Effect.promise(() => readdir(join(dir, "blobs")))
      expect(shards).toHaveLength(1)
      const files = yield* Effect.promise(() => readdir(join(dir, "blobs", shards[0]!)))
      expect(files.sort()).toEqual([expect.stringMatching(/^[0-9a-f]{64}\.bin$/), expect.stringMatching(/^[0-9a-f]{64}\.json$/)])
      expect(Option.isSome(yield* store.get("../../escape"))).toBe(true)
    }))

  it.scoped("a storage failure is a StorageError", () =>
    Effect.gen(function* () {
      const dir = yield* tempDir
      const store = FileBlobStore.make(join(dir, "file-not-dir", "x"))
      yield* Effect.promise(() => import("node:fs/promises").then((fs) => fs.writeFile(join(dir, "file-not-dir"), "")))
      const error = yield* store.put("k", { contentType: "a/b", bytes: new Uint8Array() }).pipe(Effect.flip)
      expect(error._tag).toBe("StorageError")
    }))
})
