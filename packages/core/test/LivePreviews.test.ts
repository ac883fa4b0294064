/**
 * Live previews (docs/api.md#live-executions) in virtual time: a node's `preview` images are
 * stored under the execution's media prefix at most once per 500 ms (a newer one within the
 * interval replacing the pending one, the last written before the run's end), images over
 * 512 KiB are not kept, only the newest image and report are kept, the stream shows each written
 * preview as a `preview` event with a media URL of its image, and retention deletes the image
 * with the execution.
 */
import type { ExecutionId } from "@appexec/api/Ids"
import { Appexec, BlobStore, ExecutionReports, MediaUrls, NodeType } from "@appexec/core"
import { TestHarness } from "@appexec/testing"
import { describe, expect, it } from "@effect/vitest"
import { Chunk, Effect, Fiber, Layer, Option, Redacted, Schema, Stream, TestClock } from "effect"

/** A tagged image (core keeps bytes as they are: what they hold is not read here). */
const image = (tag: number, size = 16) => {
  const bytes = new Uint8Array(size)
  bytes[0] = tag
  return bytes
}

/**
 * Previews at (ms from its start): 0 → 1, 100 → 2, 200 → 3, 1000 → 4, 1100 → 5, 1200 → an image
 * over the bound; ends at 1300.
 */
const previewer = NodeType.defineNode({
  type: "test.previewer",
  description: "Shows previews.",
  role: "process",
  inputs: { min: 1, max: 1 },
  config: Schema.Struct({}),
  run: ({ preview, upstream }) =>
    Effect.gen(function*() {
      yield* preview(image(1), "image/jpeg")
      yield* Effect.sleep("100 millis")
      yield* preview(image(2), "image/jpeg")
      yield* Effect.sleep("100 millis")
      yield* preview(image(3), "image/png")
      yield* Effect.sleep("800 millis")
      yield* preview(image(4), "image/jpeg")
      yield* Effect.sleep("100 millis")
      yield* preview(image(5), "image/jpeg")
      yield* Effect.sleep("100 millis")
      yield* preview(image(6, ExecutionReports.PREVIEW_BYTES + 1), "image/jpeg")
      yield* Effect.sleep("100 millis")
      return upstream[0]!.value
    })
})

const app = {
  name: "Previews",
  public: true,
  nodes: [
    { id: "prompt", type: "input.text", label: "Prompt", config: { name: "prompt", required: true } },
    { id: "sample", type: "test.previewer", label: "Sampler", config: {} },
    { id: "out", type: "output.text", label: "Out", config: {} }
  ],
  edges: [{ source: "prompt", target: "sample" }, { source: "sample", target: "out" }]
}

const DAY = 24 * 60 * 60 * 1000

const harness = TestHarness.layer({
  nodes: [previewer],
  config: { pollInterval: "1 day", retention: "1 day", retentionInterval: "1 hour" }
}).pipe(
  Layer.provideMerge(MediaUrls.layer({
    mode: "signed",
    baseUrl: "http://127.0.0.1:1",
    secret: Redacted.make("a secret of at least thirty-two bytes, for tests")
  }))
)

const start = Effect.gen(function*() {
  const appexec = yield* Appexec.Appexec
  const imported = yield* appexec.apps.import(app)
  const principal = yield* TestHarness.signIn()
  const started = yield* appexec.executions.start(principal, imported.appId, { prompt: "hi" })
  return { appexec, principal, executionId: started.executionId as ExecutionId }
})

/** The kept preview report of an execution, if any. */
const keptPreview = (executionId: ExecutionId) =>
  Effect.gen(function*() {
    const reports = yield* ExecutionReports.ExecutionReports
    const previews = (yield* reports.after(executionId, 0)).reports.flatMap((stored) =>
      stored.report._tag === "Preview" ? [stored.report] : []
    )
    expect(previews.length).toBeLessThanOrEqual(1)
    return previews[0]
  })

/** The first byte of the image a preview URL names, if it is still stored. */
const imageTag = (url: string) =>
  Effect.gen(function*() {
    const urls = yield* MediaUrls.MediaUrls
    const key = Option.getOrThrow(yield* urls.verify(new URL(url)))
    const blob = yield* (yield* BlobStore.BlobStore).get(key.key)
    return Option.map(blob, (b) => b.bytes[0])
  })

/** The keys of the blobs stored under an execution's prefix. */
const blobsOf = (executionId: string) =>
  Effect.gen(function*() {
    const blobs = yield* BlobStore.BlobStore
    const entries = yield* Stream.runCollect(blobs.list!(BlobStore.executionPrefix(executionId)))
    return Chunk.toArray(entries).map((entry) => entry.key)
  })

describe("live previews", () => {
  it.scoped("one is stored per 500 ms, the newest replacing the pending one, none over 512 KiB, the last kept", () =>
    Effect.gen(function*() {
      const { executionId } = yield* start
      yield* TestClock.adjust(0)
      const first = yield* keptPreview(executionId)
      expect(first).toMatchObject({ nodeId: "sample", mediaType: "image/jpeg" })
      expect(yield* imageTag(first!.url)).toEqual(Option.some(1))
      // 2 and 3 come within the interval: 3 replaces 2, and waits for its end.
      yield* TestClock.adjust(250)
      expect((yield* keptPreview(executionId))!.url).toBe(first!.url)
      yield* TestClock.adjust(250)
      const third = yield* keptPreview(executionId)
      expect(third).toMatchObject({ nodeId: "sample", mediaType: "image/png", at: 200 })
      expect(yield* imageTag(third!.url)).toEqual(Option.some(3))
      // Only the newest image is kept.
      expect(yield* imageTag(first!.url)).toEqual(Option.none())
      expect(yield* blobsOf(executionId)).toHaveLength(1)
      // 4 after a quiet spell: at once.
      yield* TestClock.adjust(500)
      expect(yield* imageTag((yield* keptPreview(executionId))!.url)).toEqual(Option.some(4))
      // 5 within the interval, then an image over the bound (not kept: 5 stays pending), then the
      // end of the run at 1300, before the interval's: 5 is written before the terminal save.
      yield* TestClock.adjust(300)
      const appexec = yield* Appexec.Appexec
      const done = yield* appexec.executions.await(executionId)
      expect(done.status).toBe("completed")
      const last = yield* keptPreview(executionId)
      expect(last!.at).toBe(1100)
      expect(yield* imageTag(last!.url)).toEqual(Option.some(5))
      yield* TestClock.adjust(1000)
      expect((yield* keptPreview(executionId))!.url).toBe(last!.url)
      expect(yield* blobsOf(executionId)).toHaveLength(1)
    }).pipe(Effect.provide(harness)))

  it.scoped("the stream shows each written preview as a preview event, before the terminal snapshot", () =>
    Effect.gen(function*() {
      const { appexec, executionId, principal } = yield* start
      const stream = yield* appexec.executions.events(principal, executionId)
      const fiber = yield* Effect.fork(Stream.runCollect(stream))
      for (let t = 0; t < 1500; t += 50) yield* TestClock.adjust(50)
      const events = Chunk.toArray(yield* Fiber.join(fiber))
      const previews = events.filter((e) => e.event === "preview").map((e) => JSON.parse(e.data))
      expect(previews.map((p) => Object.keys(p).sort())).toEqual(
        previews.map(() => ["at", "mediaType", "nodeId", "url"])
      )
      // The stream opens with the snapshot as it is then (the first preview may be older): the
      // previews written after it follow.
      expect(previews.length).toBeGreaterThanOrEqual(3)
      expect(previews.slice(-3).map((p) => [p.nodeId, p.mediaType, p.at])).toEqual([
        ["sample", "image/png", "1970-01-01T00:00:00.200Z"],
        ["sample", "image/jpeg", "1970-01-01T00:00:01.000Z"],
        ["sample", "image/jpeg", "1970-01-01T00:00:01.100Z"]
      ])
      expect(yield* imageTag(previews.at(-1)!.url)).toEqual(Option.some(5))
      const lastPreview = events.map((e) => e.event).lastIndexOf("preview")
      const terminal = events.findIndex((e) => e.event === "execution" && JSON.parse(e.data).status === "completed")
      expect(terminal).toBe(events.length - 1)
      expect(lastPreview).toBeLessThan(terminal)
      expect(Number(events[lastPreview]!.id)).toBeLessThan(Number(events[terminal]!.id))
    }).pipe(Effect.provide(harness)))

  it.scoped("retention deletes the preview's image with the execution", () =>
    Effect.gen(function*() {
      const { appexec, executionId } = yield* start
      yield* TestClock.adjust(2000)
      expect((yield* appexec.executions.await(executionId)).status).toBe("completed")
      const kept = yield* keptPreview(executionId)
      expect(yield* imageTag(kept!.url)).toEqual(Option.some(5))
      yield* TestClock.adjust(DAY + 2 * 60 * 60 * 1000)
      expect(yield* blobsOf(executionId)).toEqual([])
      expect(yield* keptPreview(executionId)).toBeUndefined()
    }).pipe(Effect.provide(harness)))

  it.scoped("a node that shows previews on an instance without media URLs runs as before", () =>
    Effect.gen(function*() {
      const { appexec, executionId } = yield* start
      yield* TestClock.adjust(2000)
      expect((yield* appexec.executions.await(executionId)).status).toBe("completed")
      expect(yield* keptPreview(executionId)).toBeUndefined()
      expect(yield* blobsOf(executionId)).toEqual([])
    }).pipe(Effect.provide(TestHarness.layer({ nodes: [previewer] }))))
})
