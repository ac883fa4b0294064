/**
 * `stream`, `logs` and the waits that follow the event stream, against a scripted server on a real
 * socket (`SseServer`): typed events to the terminal one, resume with `Last-Event-ID` after a
 * break, an end without the terminal event or a silence of three heartbeats, after the `reconnect`
 * event of a stopping server (its `retry:`, not the backoff), giving up after the
 * retry limit, and the fall-back to polling of `wait` on a server without the stream.
 */
import { describe, expect, it } from "@effect/vitest"
import { Chunk, Effect, Fiber, Queue, Stream, TestClock } from "effect"
import { AppexecClient, createClient, type EventStream } from "../src/index.js"
import {
  type Connection,
  execution,
  EXECUTION_ID,
  executionNotFound,
  type Refusal,
  routeNotFound,
  serveScript,
  sse
} from "./SseServer.js"

const progress = (fraction: number) => ({ nodeId: "pause", fraction, message: `${fraction * 100}%` })
const logLine = (message: string) => ({ at: "2026-11-22T10:00:02.000Z", level: "info", nodeId: "fetch", message })

/** A client of the scripted server; reconnections follow at once unless `retry` says otherwise. */
const clientOf = (url: string, retry: { maxRetries?: number; baseDelayMs?: number } = {}) =>
  AppexecClient.make({ baseUrl: url, apiKey: "aex_test", retry: { baseDelayMs: 0, ...retry } })

const summary = (events: Iterable<EventStream.LiveEvent>) =>
  [...events].map((e) => `${e.id} ${e.event} ${e.event === "execution" ? e.data.status : JSON.stringify(e.data)}`)

/** A `preview` event's data (its `at` as the decoded event holds it: a Date). */
const preview = {
  nodeId: "sample",
  url: "http://127.0.0.1:1/media/executions/x/preview-1-1.jpg?expires=1&signature=s",
  mediaType: "image/jpeg",
  at: new Date("2026-12-01T10:00:00.000Z")
}

const script = (...connections: ReadonlyArray<Connection | Refusal>) => ({ connections })

describe("client.stream: the live events of an execution", () => {
  it.scoped("gives the typed events (a preview's too) up to the terminal execution, skipping unknown ones, then ends, though the server stays open", () =>
    Effect.gen(function*() {
      const server = yield* serveScript(script({
        send: [
          ": keep-alive\n\n",
          "retry: 0\n",
          sse("execution", 1, execution("running")),
          sse("progress", 2, progress(0.5)),
          // One event cut across chunks, with CRLF line ends.
          `event: log\r\nid: 3\r\ndata: ${JSON.stringify(logLine("GET example.com 200"))}\r`,
          "\n\r\n",
          sse("preview", 4, preview),
          sse("unknown-to-this-client", 5, { x: 1 }),
          sse("execution", 6, execution("completed"))
        ],
        then: "hang"
      }))
      const client = yield* clientOf(server.url)
      const events = yield* Stream.runCollect(client.stream(EXECUTION_ID))
      const previewEvent = [...events].find((e) => e.event === "preview")
      expect(previewEvent?.data).toEqual(preview)
      expect(summary(events)).toEqual([
        "1 execution running",
        `2 progress ${JSON.stringify(progress(0.5))}`,
        `3 log ${JSON.stringify(logLine("GET example.com 200"))}`,
        `4 preview ${JSON.stringify(preview)}`,
        "6 execution completed"
      ])
      expect(server.requests).toEqual([
        {
          method: "GET",
          path: `/v1/executions/${EXECUTION_ID}/events`,
          accept: "text/event-stream",
          apiKey: "aex_test",
          lastEventId: null
        }
      ])
    }))

  it.scoped("resumes after a break and after an end without the terminal event, with Last-Event-ID: nothing missed, nothing repeated", () =>
    Effect.gen(function*() {
      const server = yield* serveScript(script(
        {
          send: [
            sse("execution", 10, execution("queued", { queuePosition: 2 })),
            sse("execution", 20, execution("running"))
          ],
          then: "drop"
        },
        { send: [sse("log", 21, logLine("a"))], then: "end" },
        { send: [sse("log", 22, logLine("b")), sse("execution", 30, execution("failed"))], then: "end" }
      ))
      const client = yield* clientOf(server.url)
      const events = Chunk.toReadonlyArray(yield* Stream.runCollect(client.stream(EXECUTION_ID)))
      expect(events.map((e) => e.id)).toEqual(["10", "20", "21", "22", "30"])
      expect(events[0]?.event === "execution" && events[0].data.queuePosition).toBe(2)
      expect(server.requests.map((r) => r.lastEventId)).toEqual([null, "20", "21"])
    }))

  it.scoped("resumes from a given lastEventId", () =>
    Effect.gen(function*() {
      const server = yield* serveScript(script({ send: [sse("execution", 8, execution("completed"))], then: "end" }))
      const client = yield* clientOf(server.url)
      yield* Stream.runDrain(client.stream(EXECUTION_ID, { lastEventId: "7" }))
      expect(server.requests.map((r) => r.lastEventId)).toEqual(["7"])
    }))

  it.scoped("opens again a connection silent for three heartbeats, after the backoff", () =>
    Effect.gen(function*() {
      const server = yield* serveScript(script(
        { send: [sse("execution", 1, execution("running"))], then: "hang" },
        { send: [sse("execution", 2, execution("completed"))], then: "end" }
      ))
      const client = yield* clientOf(server.url, { baseDelayMs: 1_000 })
      const seen = yield* Queue.unbounded<EventStream.LiveEvent>()
      const fiber = yield* Effect.fork(Stream.runForEach(client.stream(EXECUTION_ID), (e) => Queue.offer(seen, e)))
      expect((yield* Queue.take(seen)).id).toBe("1")
      yield* TestClock.adjust("44 seconds")
      expect(server.requests.length).toBe(1)
      // Silent 45 s: the connection is dropped, and the next one follows a backoff of 0.5–1 s.
      yield* TestClock.adjust("1 second")
      yield* TestClock.adjust("1 second")
      expect((yield* Queue.take(seen)).id).toBe("2")
      yield* Fiber.join(fiber)
      expect(server.requests.map((r) => r.lastEventId)).toEqual([null, "1"])
      expect(server.closed()).toBe(1)
    }))

  it.scoped("a reconnect event of a stopping server ends the connection and opens the next one after its retry, not the backoff", () =>
    Effect.gen(function*() {
      const reconnect = "event: reconnect\nretry: 1000\ndata: {\"reason\":\"the server is stopping\"}\n\n"
      const server = yield* serveScript(script(
        // The stopping server's connection stays open after it: the client ends it.
        { send: [sse("execution", 10, execution("running")), sse("log", 20, logLine("a")), reconnect], then: "hang" },
        { send: [sse("execution", 30, execution("completed"))], then: "end" }
      ))
      const client = yield* clientOf(server.url, { baseDelayMs: 60_000, maxRetries: 1 })
      const seen = yield* Queue.unbounded<EventStream.LiveEvent>()
      const fiber = yield* Effect.fork(Stream.runForEach(client.stream(EXECUTION_ID), (e) => Queue.offer(seen, e)))
      expect((yield* Queue.take(seen)).id).toBe("10")
      expect((yield* Queue.take(seen)).id).toBe("20")
      yield* TestClock.adjust("999 millis")
      expect(server.requests.length).toBe(1)
      yield* TestClock.adjust("1 millis")
      expect((yield* Queue.take(seen)).id).toBe("30")
      yield* Fiber.join(fiber)
      expect(server.requests.map((r) => r.lastEventId)).toEqual([null, "20"])
      expect(server.closed()).toBe(1)
    }))

  it.scoped("gives up with a NetworkError after maxRetries connections in a row that received nothing", () =>
    Effect.gen(function*() {
      const broken: Connection = { send: [], then: "drop" }
      const server = yield* serveScript(script(
        { send: [sse("execution", 1, execution("running"))], then: "drop" },
        broken,
        broken
      ))
      const client = yield* clientOf(server.url, { maxRetries: 2 })
      const error = yield* Effect.flip(Stream.runDrain(client.stream(EXECUTION_ID)))
      expect(error).toMatchObject({ _tag: "NetworkError", reason: "network", sent: true })
      // The first connection broke after an event, the next two (the two retries) before any.
      expect(error.message).toContain("broke 3 times in a row")
      expect(server.requests.length).toBe(3)
    }))

  it.scoped("fails with the ApiError of a refused request: an unknown execution, an event that does not decode", () =>
    Effect.gen(function*() {
      const missing = yield* serveScript(script(executionNotFound))
      const notFound = yield* Effect.flip(Stream.runDrain((yield* clientOf(missing.url)).stream(EXECUTION_ID)))
      expect(notFound).toMatchObject({ _tag: "ApiError", status: 404, code: "not_found" })

      const garbled = yield* serveScript(script({ send: [sse("execution", 1, { status: "running" })], then: "end" }))
      const undecodable = yield* Effect.flip(Stream.runDrain((yield* clientOf(garbled.url)).stream(EXECUTION_ID)))
      expect(undecodable).toMatchObject({ _tag: "ApiError", code: "unexpected_response" })
      expect(garbled.requests.length).toBe(1)
    }))

  it.scopedLive("the Promise client iterates with for await; leaving the loop early closes the connection", () =>
    Effect.gen(function*() {
      const server = yield* serveScript(script(
        {
          send: [sse("execution", 1, execution("running")), sse("progress", 2, progress(0.25))],
          then: "hang"
        },
        { send: [sse("execution", 1, execution("running")), sse("execution", 2, execution("completed"))], then: "end" }
      ))
      const client = createClient({ baseUrl: server.url, apiKey: "aex_test" })
      const first = yield* Effect.promise(async () => {
        const ids: Array<string> = []
        for await (const event of client.stream(EXECUTION_ID)) {
          ids.push(event.id)
          if (event.event === "progress") break
        }
        return ids
      })
      expect(first).toEqual(["1", "2"])
      const all = yield* Effect.promise(async () => {
        const events: Array<EventStream.LiveEvent> = []
        for await (const event of client.stream(EXECUTION_ID)) events.push(event)
        return summary(events)
      })
      expect(all).toEqual(["1 execution running", "2 execution completed"])
      expect(server.closed()).toBeGreaterThanOrEqual(1)
    }))
})

describe("wait and run on the event stream", () => {
  it.scoped("follows the stream: every execution to onStatus, every event to onEvent, no poll", () =>
    Effect.gen(function*() {
      const server = yield* serveScript(script({
        send: [
          sse("execution", 1, execution("running")),
          sse("progress", 2, progress(1)),
          sse("execution", 3, execution("completed"))
        ],
        then: "end"
      }))
      const client = yield* clientOf(server.url)
      const statuses: Array<string> = []
      const events: Array<string> = []
      const done = yield* client.executions.wait(EXECUTION_ID, {
        onStatus: (e) => void statuses.push(e.status),
        onEvent: (e) => Effect.sync(() => events.push(e.event))
      })
      expect(done.status).toBe("completed")
      expect(done.completedAt?.toISOString()).toBe("2026-11-22T10:00:09.000Z")
      expect(statuses).toEqual(["running", "completed"])
      expect(events).toEqual(["execution", "progress", "execution"])
      expect(server.requests.map((r) => r.path)).toEqual([`/v1/executions/${EXECUTION_ID}/events`])
    }))

  it.scoped("polls instead on a server without the stream (404 route not found), and after a stream that cannot be opened", () =>
    Effect.gen(function*() {
      for (const refusal of [routeNotFound, { status: 200, body: { data: [] } }, { status: 406, body: "" }]) {
        const server = yield* serveScript({ connections: [refusal], statuses: ["running", "completed"] })
        const client = yield* clientOf(server.url)
        const statuses: Array<string> = []
        const done = yield* client.executions.wait(EXECUTION_ID, {
          interval: 0,
          onStatus: (e) => void statuses.push(e.status)
        })
        expect(done.status).toBe("completed")
        expect(statuses).toEqual(["running", "completed"])
        expect(server.requests.map((r) => r.path)).toEqual([
          `/v1/executions/${EXECUTION_ID}/events`,
          `/v1/executions/${EXECUTION_ID}`,
          `/v1/executions/${EXECUTION_ID}`
        ])
      }
    }))

  it.scoped("an execution the stream does not find fails the wait with its 404, without polling", () =>
    Effect.gen(function*() {
      const server = yield* serveScript(script(executionNotFound))
      const client = yield* clientOf(server.url)
      const error = yield* Effect.flip(client.executions.wait(EXECUTION_ID))
      expect(error).toMatchObject({
        _tag: "ApiError",
        status: 404,
        message: `Execution ${EXECUTION_ID} does not exist.`
      })
      expect(server.requests.length).toBe(1)
    }))

  it.scoped("polls on after a stream given up, and polls only with live: false", () =>
    Effect.gen(function*() {
      const broken: Connection = { send: [], then: "drop" }
      const server = yield* serveScript({
        connections: [{ send: [sse("execution", 1, execution("running"))], then: "drop" }, broken],
        statuses: ["completed"]
      })
      const client = yield* clientOf(server.url, { maxRetries: 0 })
      expect((yield* client.executions.wait(EXECUTION_ID, { interval: 0 })).status).toBe("completed")
      expect(server.requests.map((r) => r.path.split("/").at(-1))).toEqual(["events", EXECUTION_ID])

      const polled = yield* serveScript({ statuses: ["completed"] })
      const polling = yield* clientOf(polled.url)
      expect((yield* polling.executions.wait(EXECUTION_ID, { live: false })).status).toBe("completed")
      expect(polled.requests.map((r) => r.path)).toEqual([`/v1/executions/${EXECUTION_ID}`])
    }))

  it.scoped("a timeout stops a wait on the stream with the last status it saw", () =>
    Effect.gen(function*() {
      const server = yield* serveScript(script({ send: [sse("execution", 1, execution("running"))], then: "hang" }))
      const client = yield* clientOf(server.url)
      const seen = yield* Queue.unbounded<string>()
      const fiber = yield* Effect.fork(
        Effect.flip(
          client.executions.wait(EXECUTION_ID, { timeout: 5_000, onStatus: (e) => Queue.offer(seen, e.status) })
        )
      )
      expect(yield* Queue.take(seen)).toBe("running")
      yield* TestClock.adjust("5 seconds")
      expect(yield* Fiber.join(fiber)).toMatchObject({ _tag: "WaitError", reason: "timeout", lastStatus: "running" })
    }))

  it.scoped("reads the kept log lines", () =>
    Effect.gen(function*() {
      const server = yield* serveScript({ logs: [logLine("one"), { ...logLine("dropped 3"), nodeId: null }] })
      const client = yield* clientOf(server.url)
      const lines = yield* client.executions.logs(EXECUTION_ID)
      expect(lines.map((l) => [l.nodeId, l.message, l.at.toISOString()])).toEqual([
        ["fetch", "one", "2026-11-22T10:00:02.000Z"],
        [null, "dropped 3", "2026-11-22T10:00:02.000Z"]
      ])
    }))
})
