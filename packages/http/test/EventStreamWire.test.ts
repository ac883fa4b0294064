/**
 * The wire pieces of the event stream, alone: an event's SSE frame (multi-line data included),
 * the app's heartbeats under virtual time (each waiter called once its time has passed since it
 * asked, on one timer; stopped with the app), and which `Accept` values take `text/event-stream`.
 */
import { describe, expect, it } from "@effect/vitest"
import { Chunk, Clock, Effect, Exit, Scope, TestClock } from "effect"
import { acceptsEventStream } from "../src/internal/Endpoints.js"
import * as EventStream from "../src/internal/EventStream.js"
import * as Heartbeats from "../src/internal/Heartbeats.js"

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

describe("Heartbeats", () => {
  it.scoped("calls each waiter once its time has passed since it asked, on one timer, and stops them all with the app", () =>
    Effect.gen(function*() {
      const called: Array<readonly [string, number, Heartbeats.Reason]> = []
      const scope = yield* Scope.make()
      const beats = yield* Heartbeats.make("15 seconds").pipe(Scope.extend(scope))
      const ask = (name: string) =>
        Effect.flatMap(
          Clock.currentTimeMillis,
          (asked) => Effect.sync(() => beats.after((reason) => void called.push([name, asked, reason])))
        )
      const step = (millis: number) => Effect.zipRight(TestClock.adjust(millis), Effect.yieldNow())
      yield* ask("a")
      yield* step(5_000)
      const cancelB = yield* ask("b")
      yield* step(5_000)
      yield* ask("c")
      // a is due at 15 s; b, canceled at 12 s, never; c at 25 s.
      yield* step(2_000)
      cancelB()
      yield* step(3_000)
      expect(called).toEqual([["a", 0, "beat"]])
      yield* step(9_999)
      expect(called).toHaveLength(1)
      yield* step(1)
      expect(called).toEqual([["a", 0, "beat"], ["c", 10_000, "beat"]])
      // Waiting when the app stops, or asking after: stopped at once.
      yield* ask("d")
      yield* Scope.close(scope, Exit.void)
      yield* ask("e")
      expect(called.slice(2).map(([name, , reason]) => [name, reason])).toEqual([["d", "stop"], ["e", "stop"]])
    }))

  it.scoped("stop, before the app's end, stops every waiter and every later one; the end then does nothing more", () =>
    Effect.gen(function*() {
      const beats = yield* Heartbeats.make("15 seconds")
      const called: Array<string> = []
      beats.after((reason) => void called.push(`a ${reason}`))
      yield* beats.stop
      beats.after((reason) => void called.push(`b ${reason}`))
      yield* beats.stop
      yield* TestClock.adjust(60_000)
      expect(called).toEqual(["a stop", "b stop"])
    }))

  it("the reconnect event has no id, a retry of 1 s and a reason", () => {
    expect(text(EventStream.reconnect)).toBe(
      "event: reconnect\nretry: 1000\ndata: {\"reason\":\"the server is stopping; reconnect with Last-Event-ID\"}\n\n"
    )
  })

  it.scoped("a canceled first waiter moves the timer on to the next one", () =>
    Effect.gen(function*() {
      const beats = yield* Heartbeats.make("15 seconds")
      const called: Array<number> = []
      const cancelFirst = beats.after(() => void called.push(1))
      yield* TestClock.adjust(1_000)
      beats.after(() => void called.push(2))
      cancelFirst()
      for (let i = 0; i < 10; i++) yield* Effect.yieldNow()
      // The timer sleeps until the second one's time, 16 s: nothing at 15 s.
      expect(Chunk.toReadonlyArray(yield* TestClock.sleeps())).toContain(16_000)
      yield* TestClock.adjust(14_000)
      expect(called).toEqual([])
      yield* TestClock.adjust(1_000)
      expect(called).toEqual([2])
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
