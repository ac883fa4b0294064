/**
 * Live previews over a real socket (docs/api.md#live-executions): a node's preview image reaches
 * the event stream as a `preview` event whose URL answers the image (a JPEG sharp decodes) on the
 * media route, and the stream ends with the terminal snapshot after it. Virtual time: the node
 * waits for the test to move the clock before its preview and before it ends.
 */
import { Live } from "@appexec/api"
import { Appexec, MediaUrls, NodeType } from "@appexec/core"
import { NodeListener } from "@appexec/platform-node"
import { TestHarness, TestHttpServer } from "@appexec/testing"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Layer, Option, Redacted, Schema, TestClock } from "effect"
import sharp from "sharp"
import { SigningKeysTest } from "./fixtures.js"
import { eventsUntilEnd, open } from "./sse.js"

/** A 64×48 JPEG, as a ComfyUI sampler's frame is. */
const frame = Effect.promise(() =>
  sharp({ create: { width: 64, height: 48, channels: 3, background: { r: 200, g: 40, b: 40 } } }).jpeg().toBuffer()
)

/** Shows one preview after 100 ms, then works for a second. */
const previewer = NodeType.defineNode({
  type: "test.previewer",
  description: "Shows a preview.",
  role: "process",
  inputs: { min: 1, max: 1 },
  config: Schema.Struct({}),
  run: ({ preview, upstream }) =>
    Effect.gen(function*() {
      const bytes = new Uint8Array(yield* frame)
      yield* Effect.sleep("100 millis")
      yield* preview(bytes, "image/jpeg")
      yield* Effect.sleep("1 second")
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

/** An instance with signed media URLs on `baseUrl`. */
const instance = (baseUrl: string) =>
  Layer.provideMerge(SigningKeysTest, TestHarness.layer({ nodes: [previewer] })).pipe(
    Layer.provideMerge(MediaUrls.layer({
      mode: "signed",
      baseUrl,
      secret: Redacted.make("a media secret of at least thirty-two bytes")
    }))
  )

const decodePreview = Schema.decodeUnknownSync(Schema.parseJson(Live.EventData.preview))

describe("live previews over a socket", () => {
  it.scoped("the stream gives a preview event whose URL answers a decodable image, then the end", () =>
    Effect.gen(function*() {
      const { origin, server } = yield* TestHttpServer.listening
      yield* Effect.gen(function*() {
        const listener = yield* NodeListener.make({ logRequests: false })
        server.on("request", listener)
        const appexec = yield* Appexec.Appexec
        const imported = yield* appexec.apps.import(app)
        const principal = yield* TestHarness.signIn()
        const started = yield* appexec.executions.start(principal, imported.appId, { prompt: "hi" })
        const stream = yield* open(origin, `/v1/executions/${started.executionId}/events`, {
          accept: "text/event-stream",
          "x-api-key": principal.key
        })
        expect(stream.status).toBe(200)
        // The stream opens with the execution as it is; the preview shows 100 ms later.
        const opening = yield* stream.next
        expect(Option.map(opening, (f) => f._tag === "Event" && f.event === "execution")).toEqual(Option.some(true))
        yield* TestClock.adjust("100 millis")
        let data: string | undefined
        while (data === undefined) {
          const next = yield* stream.next
          if (Option.isNone(next)) return yield* Effect.dieMessage("the stream ended before a preview")
          if (next.value._tag === "Event" && next.value.event === "preview") data = next.value.data
        }
        expect(Object.keys(JSON.parse(data)).sort()).toEqual(["at", "mediaType", "nodeId", "url"])
        const preview = decodePreview(data)
        expect([preview.nodeId, preview.mediaType]).toEqual(["sample", "image/jpeg"])
        expect(preview.url.startsWith(`${origin}/media/executions/${started.executionId}/`)).toBe(true)
        const answer = yield* Effect.promise(async () => {
          const response = await fetch(preview.url, { headers: { "x-api-key": principal.key } })
          return {
            status: response.status,
            type: response.headers.get("content-type"),
            bytes: new Uint8Array(await response.arrayBuffer())
          }
        })
        expect([answer.status, answer.type]).toEqual([200, "image/jpeg"])
        const meta = yield* Effect.promise(() => sharp(answer.bytes).metadata())
        expect([meta.format, meta.width, meta.height]).toEqual(["jpeg", 64, 48])

        yield* TestClock.adjust("2 seconds")
        const rest = yield* eventsUntilEnd(stream)
        const last = rest.at(-1)!
        expect([last.event, JSON.parse(last.data).status]).toEqual(["execution", "completed"])
      }).pipe(Effect.provide(instance(origin)))
    }))
})
