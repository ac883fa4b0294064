/**
 * `provider.comfyui`'s live previews against the protocol-faithful test server
 * (`support/ComfyServer.ts`, which sends a JPEG binary frame at each sampler step): the frames
 * become `preview` events of the execution's stream, the newest one's URL a JPEG sharp decodes, the last
 * before the terminal snapshot.
 */
import { Ids, Live } from "@appexec/api"
import { Appexec } from "@appexec/core"
import { describe, expect, it } from "@effect/vitest"
import { Chunk, Effect, Schema, Stream } from "effect"
import { describeImage } from "../../nodes/test/support/Images.js"
import * as ComfyServer from "./support/ComfyServer.js"
import { download, layer, start } from "./support/Instance.js"
import { app, textToImage } from "./support/Workflows.js"

const decodePreview = Schema.decodeUnknownSync(Schema.parseJson(Live.EventData.preview))

describe("provider.comfyui previews", () => {
  it.live("the sampler's preview frames reach the event stream as preview events whose images decode", () =>
    Effect.gen(function*() {
      const server = yield* ComfyServer.make({ steps: 6, stepDelayMs: 150 })
      yield* Effect.gen(function*() {
        const appexec = yield* Appexec.Appexec
        const { executionId, principal } = yield* start(app(textToImage), { prompt: "a lighthouse at dusk" })
        const stream = yield* appexec.executions.events(principal, Ids.ExecutionId.make(executionId))
        const events = Chunk.toArray(yield* Stream.runCollect(stream))
        const terminal = events.at(-1)!
        expect([terminal.event, JSON.parse(terminal.data).status]).toEqual(["execution", "completed"])
        const previews = events.flatMap((e) => e.event === "preview" ? [decodePreview(e.data)] : [])
        // Six frames 150 ms apart, at most one stored per 500 ms: the first at once, the last before the end.
        expect(previews.length).toBeGreaterThanOrEqual(2)
        expect(previews.length).toBeLessThan(6)
        expect(previews.every((p) => p.nodeId === "render" && p.mediaType === "image/jpeg")).toBe(true)
        const times = previews.map((p) => p.at.getTime())
        expect(times.slice(1).every((t, i) => t - times[i]! >= 150)).toBe(true)
        // Only the newest image is kept: the last event's URL answers a JPEG of the frame's size.
        const last = yield* download(previews.at(-1)!.url)
        expect(last.contentType).toBe("image/jpeg")
        expect(yield* describeImage(last.bytes)).toEqual({ format: "jpeg", width: 16, height: 16 })
        const lastPreview = events.map((e) => e.event).lastIndexOf("preview")
        expect(lastPreview).toBeLessThan(events.length - 1)
      }).pipe(Effect.provide(layer([server.url])))
    }).pipe(Effect.scoped))
})
