/**
 * The wire pieces of the event stream, alone: an event's SSE frame (multi-line data included),
 * the heartbeat under virtual time (only after a quiet spell, counted again from each chunk), and
 * which `Accept` values take `text/event-stream`.
 */
import { describe, expect, it } from "@effect/vitest"
import { Chunk, Clock, Effect, Fiber, Queue, Stream, TestClock } from "effect"
import { acceptsEventStream } from "../src/internal/Endpoints.js"
import * as EventStream from "../src/internal/EventStream.js"

const text = (bytes: Uint8Array) => new TextDecoder().decode(bytes)

describe("frame", () => {
  it("writes id, event and data, and ends the event with a blank line", () => {
    expect(text(EventStream.frame({ event: "progress", id: "42", data: "{\"fraction\":0.5}" }))).toBe(
      "id: 42\nevent: progress\ndata: {\"fraction\":0.5}\n\n"
    )
  })

  it("writes data of several lines as one data line each, which a reader joins again", () => {
    expect(text(EventStream.frame({ event: "log", id: "7", data: "a\nb\r\nc" }))).toBe(
      "id: 7\nevent: log\ndata: a\ndata: b\ndata: c\n\n"
    )
  })

  it("the heartbeat is a comment", () => {
    expect(text(EventStream.heartbeat)).toBe(": keep-alive\n\n")
  })
})

describe("withHeartbeat", () => {
  it.scoped("beats after each quiet spell, counted again from each chunk and each beat, and ends with its stream", () =>
    Effect.gen(function*() {
      const input = yield* Queue.unbounded<string | null>()
      const chunks = Stream.fromQueue(input).pipe(Stream.takeWhile((s): s is string => s !== null))
      const output = yield* Queue.unbounded<readonly [number, string]>()
      const run = yield* EventStream.withHeartbeat(chunks, "beat", "15 seconds").pipe(
        Stream.runForEach((s) => Effect.flatMap(Clock.currentTimeMillis, (now) => Queue.offer(output, [now, s]))),
        Effect.fork
      )
      const step = (millis: number) => Effect.zipRight(TestClock.adjust(millis), Effect.yieldNow())
      yield* Effect.yieldNow()
      yield* step(14_000)
      yield* Queue.offer(input, "a")
      yield* step(14_000)
      yield* Queue.offer(input, "b")
      yield* step(15_000)
      yield* step(15_000)
      yield* step(5_000)
      yield* Queue.offer(input, null)
      yield* Fiber.join(run)
      expect(Chunk.toReadonlyArray(yield* Queue.takeAll(output))).toEqual([
        [14_000, "a"],
        [28_000, "b"],
        [43_000, "beat"],
        [58_000, "beat"]
      ])
    }))

  it.effect("passes a failure of its stream on", () =>
    Effect.gen(function*() {
      const failed = yield* EventStream.withHeartbeat(Stream.fail("broken"), "beat", "15 seconds").pipe(
        Stream.runCollect,
        Effect.flip
      )
      expect(failed).toBe("broken")
    }))
})

describe("acceptsEventStream", () => {
  it("takes no Accept, text/event-stream, text/* and */*, unless their quality is 0", () => {
    for (const accept of [undefined, "", "text/event-stream", "TEXT/EVENT-STREAM", "text/*", "*/*", "a/b, */*;q=0.1"]) {
      expect(acceptsEventStream(accept), String(accept)).toBe(true)
    }
    for (const accept of ["application/json", "text/html", "text/event-stream;q=0", "*/*; q=0", "text/plain, a/*"]) {
      expect(acceptsEventStream(accept), accept).toBe(false)
    }
  })
})
