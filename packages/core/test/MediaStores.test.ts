/**
 * Media that follow their store (docs/media.md, *Moving media*), in virtual time over in-memory
 * stores: the combined store reads a blob from whichever store holds it, finds a store recorded
 * after it started, and deletes in every store; the orphan sweep deletes what nothing refers to
 * and never what was written less than its minimum age ago; a move copies every blob, and run
 * again after a failure midway goes on where it stopped without losing one.
 */
import { Ids } from "@appexec/api"
import {
  Appexec,
  BlobStore,
  CombinedBlobStore,
  Errors,
  ExecutionStore,
  MediaMove,
  MediaStoreRegistry,
  MediaSweep
} from "@appexec/core"
import { MemoryBlobStore, TestHarness } from "@appexec/testing"
import { describe, expect, it } from "@effect/vitest"
import { Chunk, Effect, Fiber, Option, Ref, Stream, TestClock } from "effect"

const png = (n: number) => ({ contentType: "image/png", bytes: Uint8Array.from([137, 80, 78, 71, n]) })

const HOUR = 60 * 60 * 1000

/** Every key of a store, sorted. */
const keysOf = (store: BlobStore.BlobStore["Type"]) =>
  Stream.runCollect(store.list!("")).pipe(Effect.map((entries) => Chunk.toArray(entries).map((e) => e.key).sort()))

describe("CombinedBlobStore", () => {
  it.effect("puts in the primary, reads a blob from the store that holds it, finds a store added since, deletes everywhere", () =>
    Effect.gen(function*() {
      const files = yield* MemoryBlobStore.make
      const bucket = yield* MemoryBlobStore.make
      const later = yield* MemoryBlobStore.make
      const others = yield* Ref.make<ReadonlyArray<CombinedBlobStore.Member>>([{ id: "files", store: files }])
      const combined = CombinedBlobStore.make({ primary: { id: "bucket", store: bucket }, others: Ref.get(others) })

      // Made before the move: in the files store, read through the combination, ranges included.
      yield* files.put("executions/e1/a-out.png", png(1))
      expect(yield* combined.get("executions/e1/a-out.png")).toEqual(Option.some(png(1)))
      expect(Option.map(yield* combined.stat!("executions/e1/a-out.png"), (i) => i.size)).toEqual(Option.some(5))
      expect(yield* combined.getRange!("executions/e1/a-out.png", 1, 2)).toEqual(Option.some(Uint8Array.from([80, 78])))
      // New media go to the primary only.
      yield* combined.put("executions/e2/b-out.png", png(2))
      expect(yield* keysOf(bucket)).toEqual(["executions/e2/b-out.png"])
      expect(yield* keysOf(files)).toEqual(["executions/e1/a-out.png"])

      // A store recorded after the combination was made is looked in at the next miss.
      yield* later.put("executions/e3/c-out.png", png(3))
      expect(yield* combined.get("executions/e3/c-out.png")).toEqual(Option.none())
      yield* Ref.update(others, (members) => [...members, { id: "later", store: later }])
      expect(yield* combined.get("executions/e3/c-out.png")).toEqual(Option.some(png(3)))

      // A remembered store that lost the blob (moved away) is passed over: the others are looked in.
      yield* bucket.put("executions/e1/a-out.png", png(1))
      yield* files.deleteUnder("executions/e1/")
      expect(yield* combined.get("executions/e1/a-out.png")).toEqual(Option.some(png(1)))

      // Deleting an execution's media deletes them in every store.
      for (const store of [files, bucket, later]) yield* store.put("executions/e4/d-out.png", png(4))
      yield* combined.deleteUnder("executions/e4/")
      for (const store of [files, bucket, later]) {
        expect(yield* store.get("executions/e4/d-out.png")).toEqual(Option.none())
      }
      expect(yield* combined.get("executions/e4/d-out.png")).toEqual(Option.none())
    }))

  it.effect("a failing other store fails a miss but never a read the primary answers", () =>
    Effect.gen(function*() {
      const bucket = yield* MemoryBlobStore.make
      const broken = yield* MemoryBlobStore.make
      const failing: BlobStore.BlobStore["Type"] = {
        ...broken,
        get: () => new Errors.StorageError({ operation: "S3 GetObject on bucket 'gone': NoSuchBucket", cause: "gone" })
      }
      const combined = CombinedBlobStore.make({
        primary: { id: "bucket", store: bucket },
        others: Effect.succeed([{ id: "gone", store: failing }])
      })
      yield* combined.put("executions/e1/a.png", png(1))
      expect(yield* combined.get("executions/e1/a.png")).toEqual(Option.some(png(1)))
      const error = yield* Effect.flip(combined.get("executions/e1/missing.png"))
      expect(error.operation).toContain("NoSuchBucket")
    }))
})

describe("MediaStoreRegistry (memory)", () => {
  it.effect("records a location once, newest first; a second add keeps its first time and takes the new region", () =>
    Effect.gen(function*() {
      const registry = yield* MediaStoreRegistry.makeMemory
      const location = (id: string, addedAt: number, region = "us-east-1") =>
        new MediaStoreRegistry.StoreLocation({ id, uri: id, endpoint: null, region, addedAt })
      yield* registry.add(location("s3://a", 1))
      yield* registry.add(location("s3://b", 2))
      yield* registry.add(location("s3://a", 3, "eu-west-1"))
      expect((yield* registry.list).map((l) => [l.id, l.addedAt, l.region])).toEqual([
        ["s3://b", 2, "us-east-1"],
        ["s3://a", 1, "eu-west-1"]
      ])
      expect(yield* registry.remove("s3://b")).toBe(true)
      expect(yield* registry.remove("s3://b")).toBe(false)
      expect((yield* registry.list).map((l) => l.id)).toEqual(["s3://a"])
      expect(MediaStoreRegistry.idOf("s3://a/p", "http://minio:9000")).toBe("s3://a/p at http://minio:9000")
    }))
})

const echo = {
  name: "Echo",
  public: true,
  nodes: [
    { id: "prompt", type: "input.text", label: "Prompt", config: { name: "prompt", required: true } },
    { id: "result", type: "output.text", label: "Result" }
  ],
  edges: [{ source: "prompt", target: "result" }]
}

/** A finished execution of the harness. */
const runOne = Effect.gen(function*() {
  const appexec = yield* Appexec.Appexec
  const app = yield* appexec.apps.import(echo)
  const principal = yield* TestHarness.signIn()
  const started = yield* appexec.executions.start(principal, app.appId, { prompt: "hi" })
  const waiting = yield* Effect.fork(appexec.executions.await(started.executionId))
  yield* TestClock.adjust(0)
  yield* Fiber.join(waiting)
  return started.executionId
})

describe("MediaSweep", () => {
  it.scoped("deletes blobs of executions that are gone and of expired uploads, once older than the minimum age", () =>
    Effect.gen(function*() {
      const live = yield* runOne
      const blobs = yield* BlobStore.BlobStore
      const gone = Ids.ExecutionId.make("00000000-0000-4000-8000-00000000dead")
      yield* blobs.put(`executions/${live}/a-out.png`, png(1))
      yield* blobs.put(`executions/${gone}/a-out.png`, png(2))
      yield* blobs.put("executions/not-an-id/a-out.png", png(3))
      // The clock starts on 1970-01-01: uploads whose URLs expired on 12-29 are past the days the
      // upload sweep deletes (up to two days back); those of 01-01 are live.
      yield* blobs.put("uploads/1969-12-29/w/u1", png(4))
      yield* blobs.put("uploads/1970-01-01/w/u2", png(5))
      yield* blobs.put("uploads/swept", { contentType: "text/plain", bytes: new TextEncoder().encode("1969-12-28") })
      yield* blobs.put("exports/report.csv", { contentType: "text/csv", bytes: Uint8Array.from([1]) })
      yield* TestClock.adjust(2 * HOUR)
      // Written just now: an orphan by its key, but too recent to sweep.
      const fresh = Ids.ExecutionId.make("00000000-0000-4000-8000-00000000f5e5")
      yield* blobs.put(`executions/${fresh}/a-out.png`, png(6))

      const sweep = (dryRun: boolean) =>
        Stream.runCollect(MediaSweep.sweep(blobs, { minAge: "1 hour", dryRun })).pipe(
          Effect.map((found) =>
            Chunk.toArray(found).map((f) => [f._tag, f.entry.key, f._tag === "Unknown" ? "" : f.why]).sort()
          )
        )
      const expected = [
        ["Fresh", `executions/${fresh}/a-out.png`, "execution"],
        ["Orphan", `executions/${gone}/a-out.png`, "execution"],
        ["Orphan", "executions/not-an-id/a-out.png", "execution"],
        ["Orphan", "uploads/1969-12-29/w/u1", "upload"],
        ["Unknown", "exports/report.csv", ""]
      ]
      const before = yield* keysOf(blobs)
      expect(yield* sweep(true)).toEqual(expected)
      expect(yield* keysOf(blobs)).toEqual(before)
      expect(yield* sweep(false)).toEqual(expected)
      expect(yield* keysOf(blobs)).toEqual([
        `executions/${live}/a-out.png`,
        `executions/${fresh}/a-out.png`,
        "exports/report.csv",
        "uploads/1970-01-01/w/u2",
        "uploads/swept"
      ].sort())
      // An hour on, the recent orphan is old enough.
      yield* TestClock.adjust(HOUR)
      expect((yield* sweep(false)).filter(([tag]) => tag === "Orphan")).toEqual([
        ["Orphan", `executions/${fresh}/a-out.png`, "execution"]
      ])
      expect(Option.isSome(yield* (yield* ExecutionStore.ExecutionStore).get(Ids.ExecutionId.make(live)))).toBe(true)
    }).pipe(Effect.provide(TestHarness.layer({ retention: false, config: { pollInterval: "1 day" } }))))

  it.effect("refuses a store that cannot list its blobs", () =>
    Effect.gen(function*() {
      const store = yield* MemoryBlobStore.make
      const { list: _list, ...unlisted } = store
      const error = yield* Effect.flip(Stream.runDrain(MediaSweep.sweep(unlisted, { minAge: 0, dryRun: true })))
      expect(error._tag).toBe("StorageError")
    }).pipe(Effect.provide(TestHarness.layer())))
})

describe("MediaMove", () => {
  it.effect("copies every blob with its type, deletes it from the source, and goes on where a failed run stopped", () =>
    Effect.gen(function*() {
      const from = yield* MemoryBlobStore.make
      const target = yield* MemoryBlobStore.make
      const keys = Array.from({ length: 30 }, (_, i) => `executions/e${i}/out-${i}.png`)
      for (const [i, key] of keys.entries()) yield* from.put(key, png(i))
      // The bucket fails after 12 puts, as a killed run stops: some blobs copied, some not.
      const puts = yield* Ref.make(0)
      const failing: BlobStore.BlobStore["Type"] = {
        ...target,
        put: (key, blob) =>
          Effect.flatMap(
            Ref.updateAndGet(puts, (n) => n + 1),
            (n) =>
              n > 12 ? new Errors.StorageError({ operation: "S3 PutObject", cause: "stopped" }) : target.put(key, blob)
          )
      }
      const first = yield* Effect.either(
        Stream.runCollect(MediaMove.move(from, failing, { keep: false, concurrency: 1 }))
      )
      expect(first._tag).toBe("Left")
      expect((yield* keysOf(target)).length).toBe(12)
      expect((yield* keysOf(from)).length).toBe(18)

      // A blob copied by the failed run whose source was not yet deleted is not copied again.
      yield* target.put(keys[20]!, png(20))
      const second = yield* Stream.runCollect(MediaMove.move(from, target, { keep: false }))
      const tags = Chunk.toArray(second).map((m) => m._tag)
      expect([tags.filter((t) => t === "Copied").length, tags.filter((t) => t === "Present").length]).toEqual([17, 1])
      expect(yield* keysOf(from)).toEqual([])
      expect(yield* keysOf(target)).toEqual([...keys].sort())
      for (const [i, key] of keys.entries()) expect(yield* target.get(key)).toEqual(Option.some(png(i)))

      // A copy only leaves the source as it was.
      yield* from.put("uploads/2030-01-01/w/u", png(99))
      yield* Stream.runDrain(MediaMove.move(from, target, { keep: true }))
      expect(yield* keysOf(from)).toEqual(["uploads/2030-01-01/w/u"])
      expect(yield* target.get("uploads/2030-01-01/w/u")).toEqual(Option.some(png(99)))
    }))

  it.effect("copies again a blob the target holds with another size or type, and never deletes one it could not copy", () =>
    Effect.gen(function*() {
      const from = yield* MemoryBlobStore.make
      const target = yield* MemoryBlobStore.make
      yield* from.put("executions/e/a.png", png(1))
      yield* target.put("executions/e/a.png", { contentType: "image/webp", bytes: png(1).bytes })
      yield* Stream.runDrain(MediaMove.move(from, target, { keep: false }))
      expect(yield* target.get("executions/e/a.png")).toEqual(Option.some(png(1)))

      yield* from.put("executions/e/b.png", png(2))
      const lossy: BlobStore.BlobStore["Type"] = {
        ...target,
        put: (key, blob) => target.put(key, { ...blob, bytes: blob.bytes.subarray(1) })
      }
      const error = yield* Effect.flip(Stream.runDrain(MediaMove.move(from, lossy, { keep: false })))
      expect(error.cause).toContain("does not read back as written")
      expect(yield* from.get("executions/e/b.png")).toEqual(Option.some(png(2)))
    }))
})
