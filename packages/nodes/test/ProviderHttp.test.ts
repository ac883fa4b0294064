import { NodeOutboundHttp } from "@appexec/platform-node"
import { describe, expect, it } from "@effect/vitest"
import { Chunk, Effect, Exit, Fiber, Option, Queue, Redacted, TestClock } from "effect"
import * as net from "node:net"
import * as ProviderHttp from "../src/internal/ProviderHttp.js"
import * as ProviderServers from "./support/ProviderServers.js"

const outbound = NodeOutboundHttp.layer({ allowPrivateNetworks: true })

/** The node's log as a queue, so a test waits for a line as it is written. */
const logQueue = Effect.gen(function*() {
  const lines = yield* Queue.unbounded<string>()
  const log = (message: string, level: string = "info") =>
    Queue.offer(lines, `${level}: ${message}`).pipe(Effect.asVoid)
  return { lines, log }
})

/**
 * Waits until a sleep that ends about `millis` from now (the retry's wait, which the log rounds
 * to a tenth of a second) is pending on the test clock; its exact length.
 */
const sleepPending = (millis: number) =>
  Effect.gen(function*() {
    const now = yield* TestClock.currentTimeMillis
    while (true) {
      const found = Chunk.findFirst(yield* TestClock.sleeps(), (at) => Math.abs(at - now - millis) <= 50)
      if (Option.isSome(found)) return found.value - now
      yield* Effect.yieldNow()
    }
  })

/** The wait a retry line announces, in milliseconds. */
const waitIn = (line: string) => {
  const match = / in (\d+(?:\.\d+)?)(ms|s)$/.exec(line)
  if (match === null) throw new Error(`no wait in: ${line}`)
  return Math.round(Number(match[1]) * (match[2] === "s" ? 1000 : 1))
}

const request = (url: string, extra: Partial<ProviderHttp.ProviderRequest> = {}): ProviderHttp.ProviderRequest => ({
  method: "POST",
  url,
  headers: { authorization: Redacted.make("Bearer r8_secret_token") },
  json: { input: { prompt: "a lighthouse" } },
  timeout: "30 seconds",
  maxResponseBytes: 1024 * 1024,
  ...extra
})

describe("ProviderHttp.send", () => {
  it.scoped("a 429 waits as long as Retry-After says (seconds), then sends again", () =>
    Effect.gen(function*() {
      let calls = 0
      const server = yield* ProviderServers.start(() =>
        ++calls === 1
          ? { status: 429, headers: { "retry-after": "2" }, json: { detail: "throttled" } }
          : { status: 201, json: { id: "p1" } }
      )
      const { lines, log } = yield* logQueue
      const fiber = yield* Effect.fork(ProviderHttp.send(request(server.url("/v1/predictions")), { log }))
      expect(yield* Queue.take(lines)).toBe(`warn: POST ${server.host} answered 429; retry 1 of 4 in 2s`)
      yield* sleepPending(2000)
      yield* TestClock.adjust("1999 millis")
      expect(server.received).toHaveLength(1)
      yield* TestClock.adjust("1 millis")
      const response = yield* Fiber.join(fiber)
      expect(response.status).toBe(201)
      expect(server.received).toHaveLength(2)
      // The secret was sent, redacted until then, and is in no log line.
      expect(server.received[1]!.headers["authorization"]).toBe("Bearer r8_secret_token")
      expect(JSON.parse(server.received[1]!.body)).toEqual({ input: { prompt: "a lighthouse" } })
      expect(yield* Queue.size(lines)).toBe(0)
    }).pipe(Effect.provide(outbound)))

  it.scoped("a 429 whose Retry-After is an HTTP date waits until that date", () =>
    Effect.gen(function*() {
      yield* TestClock.setTime(Date.parse("2026-01-01T00:00:00Z"))
      let calls = 0
      const server = yield* ProviderServers.start(() =>
        ++calls === 1
          ? { status: 429, headers: { "retry-after": "Thu, 01 Jan 2026 00:00:05 GMT" } }
          : { json: { ok: true } }
      )
      const { lines, log } = yield* logQueue
      const fiber = yield* Effect.fork(ProviderHttp.send(request(server.url("/x")), { log }))
      expect(yield* Queue.take(lines)).toBe(`warn: POST ${server.host} answered 429; retry 1 of 4 in 5s`)
      yield* sleepPending(5000)
      yield* TestClock.adjust("5 seconds")
      expect((yield* Fiber.join(fiber)).status).toBe(200)
    }).pipe(Effect.provide(outbound)))

  it.scoped("502, 503, 504 and a reset connection are retried with growing, jittered waits", () =>
    Effect.gen(function*() {
      const script: Array<ProviderServers.Reply> = [
        { status: 502 },
        { status: 503 },
        // The outbound client sends a request once more by itself when a kept-alive connection
        // was reset; a second reset is the one retried here.
        "reset",
        "reset",
        { status: 504 },
        { json: { status: "succeeded" } }
      ]
      const server = yield* ProviderServers.start(() => script.shift()!)
      const { lines, log } = yield* logQueue
      const fiber = yield* Effect.fork(ProviderHttp.send(request(server.url("/v1/predictions")), { log }))
      const troubles = ["answered 502", "answered 503", "failed: the connection failed", "answered 504"]
      for (const [i, trouble] of troubles.entries()) {
        const line = yield* Queue.take(lines)
        expect(line).toMatch(new RegExp(`^warn: POST ${server.host} ${trouble}; retry ${i + 1} of 4 in `))
        // Backoff from 1 s, doubled each time; jitter keeps between half and all of it.
        const wait = waitIn(line)
        expect(wait).toBeGreaterThanOrEqual(500 * 2 ** i)
        expect(wait).toBeLessThanOrEqual(1000 * 2 ** i)
        yield* TestClock.adjust(yield* sleepPending(wait))
      }
      expect((yield* Fiber.join(fiber)).status).toBe(200)
      expect(server.received).toHaveLength(6)
    }).pipe(Effect.provide(outbound)))

  it.scoped("other 4xx and 5xx answers are returned at once, never retried", () =>
    Effect.gen(function*() {
      const server = yield* ProviderServers.start((r) =>
        r.path === "/bad" ? { status: 422, json: { detail: "bad input" } } : { status: 500 }
      )
      const { lines, log } = yield* logQueue
      expect((yield* ProviderHttp.send(request(server.url("/bad")), { log })).status).toBe(422)
      expect((yield* ProviderHttp.send(request(server.url("/oops")), { log })).status).toBe(500)
      expect(server.received).toHaveLength(2)
      expect(yield* Queue.size(lines)).toBe(0)
    }).pipe(Effect.provide(outbound)))

  it.scoped("when retries run out the last answer is returned, and the log says so", () =>
    Effect.gen(function*() {
      const server = yield* ProviderServers.start(() => ({ status: 503 }))
      const { lines, log } = yield* logQueue
      const retry = { ...ProviderHttp.defaultRetry, retries: 2 }
      const fiber = yield* Effect.fork(ProviderHttp.send(request(server.url("/x")), { log, retry }))
      for (let i = 0; i < 2; i++) {
        yield* TestClock.adjust(yield* sleepPending(waitIn(yield* Queue.take(lines))))
      }
      expect(yield* Queue.take(lines)).toBe(`warn: POST ${server.host} answered 503; no retries left`)
      expect((yield* Fiber.join(fiber)).status).toBe(503)
      expect(server.received).toHaveLength(3)
    }).pipe(Effect.provide(outbound)))

  it.scoped("a wait that would pass the time allowed for retries is not taken", () =>
    Effect.gen(function*() {
      const server = yield* ProviderServers.start(() => ({ status: 429, headers: { "retry-after": "300" } }))
      const { lines, log } = yield* logQueue
      const response = yield* ProviderHttp.send(request(server.url("/x")), { log })
      expect(response.status).toBe(429)
      expect(yield* Queue.take(lines)).toBe(
        `warn: POST ${server.host} answered 429; not retried: a retry in 5m would pass the 2m allowed for retries`
      )
      expect(server.received).toHaveLength(1)
    }).pipe(Effect.provide(outbound)))

  it.scoped("an attempt that times out is retried; the last one fails the node with the time limit", () =>
    Effect.gen(function*() {
      const server = yield* ProviderServers.start(() => "hang")
      const { lines, log } = yield* logQueue
      const retry = { ...ProviderHttp.defaultRetry, retries: 1 }
      const fiber = yield* Effect.fork(
        ProviderHttp.send(request(server.url("/x"), { timeout: "5 seconds" }), { log, retry })
      )
      yield* server.requests(1)
      yield* sleepPending(5000)
      yield* TestClock.adjust("5 seconds")
      const line = yield* Queue.take(lines)
      expect(line).toMatch(new RegExp(`^warn: POST ${server.host} did not answer within 5s; retry 1 of 1 in `))
      yield* TestClock.adjust(yield* sleepPending(waitIn(line)))
      yield* server.requests(2)
      yield* sleepPending(5000)
      yield* TestClock.adjust("5 seconds")
      const exit = yield* Fiber.await(fiber)
      expect(exit).toEqual(Exit.fail(expect.objectContaining({ message: "the endpoint did not answer within 5 s" })))
      expect(yield* Queue.take(lines)).toBe(`warn: POST ${server.host} did not answer within 5s; no retries left`)
    }).pipe(Effect.provide(outbound)))

  it.scoped("a refused address is not retried and fails with the guard's words", () =>
    Effect.gen(function*() {
      const server = yield* ProviderServers.start(() => ({ status: 200 }))
      const { lines, log } = yield* logQueue
      const error = yield* ProviderHttp.send(request(server.url("/x")), { log }).pipe(
        Effect.flip,
        Effect.provide(NodeOutboundHttp.layer({ allowPrivateNetworks: false }))
      )
      expect(error.message).toContain("the request was refused: its host 127.0.0.1 is a loopback address")
      expect(server.received).toHaveLength(0)
      expect(yield* Queue.size(lines)).toBe(0)
    }))

  it.scoped("a submit (creates) that may have been taken is not sent again: 502, 504, a reset, a timeout", () =>
    Effect.gen(function*() {
      const { lines, log } = yield* logQueue
      for (const reply of [{ status: 502 }, { status: 504 }, "reset", "hang"] as const) {
        // A server of its own each time: the first request opens a fresh connection.
        const server = yield* ProviderServers.start(() => reply)
        const fiber = yield* Effect.fork(Effect.either(
          ProviderHttp.send(request(server.url("/v1/predictions"), { timeout: "5 seconds" }), { log, creates: true })
        ))
        yield* server.requests(1)
        if (reply === "hang") {
          yield* sleepPending(5000)
          yield* TestClock.adjust("5 seconds")
        }
        const result = yield* Fiber.join(fiber)
        const trouble = typeof reply === "object"
          ? `answered ${reply.status}`
          : reply === "reset"
          ? "failed: the connection failed"
          : "did not answer within 5s"
        expect(yield* Queue.take(lines)).toBe(
          `warn: POST ${server.host} ${trouble}; not retried: the provider may have taken it, and a repeat could start a second job`
        )
        if (typeof reply === "object") expect(result).toMatchObject({ _tag: "Right", right: { status: reply.status } })
        else expect(result._tag).toBe("Left")
        expect(server.received).toHaveLength(1)
      }
      expect(yield* Queue.size(lines)).toBe(0)
    }).pipe(Effect.provide(outbound)))

  it.scoped("a submit turned away before it was taken (429, 503) or never connected is sent again", () =>
    Effect.gen(function*() {
      const script: Array<ProviderServers.Reply> = [
        { status: 429, headers: { "retry-after": "1" } },
        { status: 503 },
        { status: 201, json: { id: "p1" } }
      ]
      const server = yield* ProviderServers.start(() => script.shift()!)
      const { lines, log } = yield* logQueue
      const fiber = yield* Effect.fork(
        ProviderHttp.send(request(server.url("/v1/predictions")), { log, creates: true })
      )
      expect(yield* Queue.take(lines)).toBe(`warn: POST ${server.host} answered 429; retry 1 of 4 in 1s`)
      yield* TestClock.adjust(yield* sleepPending(1000))
      const line = yield* Queue.take(lines)
      expect(line).toMatch(new RegExp(`^warn: POST ${server.host} answered 503; retry 2 of 4 in `))
      yield* TestClock.adjust(yield* sleepPending(waitIn(line)))
      expect((yield* Fiber.join(fiber)).status).toBe(201)
      expect(server.received).toHaveLength(3)

      // A port where nothing listens: the connection is refused, nothing was sent, so it is tried again.
      const closed = yield* Effect.promise(() =>
        new Promise<number>((resolve) => {
          const probe = net.createServer().listen(0, "127.0.0.1", () => {
            const { port } = probe.address() as net.AddressInfo
            probe.close(() => resolve(port))
          })
        })
      )
      const retry = { ...ProviderHttp.defaultRetry, retries: 1 }
      const refused = yield* Effect.fork(
        ProviderHttp.send(request(`http://127.0.0.1:${closed}/v1/predictions`), { log, creates: true, retry })
      )
      const first = yield* Queue.take(lines)
      expect(first).toMatch(
        new RegExp(`^warn: POST 127.0.0.1:${closed} failed: the connection failed; retry 1 of 1 in `)
      )
      yield* TestClock.adjust(yield* sleepPending(waitIn(first)))
      expect(yield* Queue.take(lines)).toBe(
        `warn: POST 127.0.0.1:${closed} failed: the connection failed; no retries left`
      )
      expect(yield* Fiber.await(refused)).toEqual(
        Exit.fail(expect.objectContaining({ message: "the request failed: the connection failed" }))
      )
    }).pipe(Effect.provide(outbound)))

  it("Retry-After: seconds, an HTTP date, or nothing usable", () => {
    const now = Date.parse("2026-01-01T00:00:00Z")
    expect(ProviderHttp.retryAfterMillis("7", now)).toEqual(Option.some(7000))
    expect(ProviderHttp.retryAfterMillis("Thu, 01 Jan 2026 00:01:00 GMT", now)).toEqual(Option.some(60_000))
    expect(ProviderHttp.retryAfterMillis("Wed, 31 Dec 2025 23:00:00 GMT", now)).toEqual(Option.some(0))
    expect(ProviderHttp.retryAfterMillis("soon", now)).toEqual(Option.none())
    expect(ProviderHttp.retryAfterMillis(undefined, now)).toEqual(Option.none())
  })
})
