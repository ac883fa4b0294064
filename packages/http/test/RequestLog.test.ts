/**
 * The request lines (docs/operations.md#request-logs): one per request, at level Debug, so that a
 * server at the usual level Info stays quiet; at Info when the answer is a 5xx or the request
 * was slow (1 s by default; a long poll only past its hold).
 */
import { HttpClientRequest } from "@effect/platform"
import { describe, expect, it } from "@effect/vitest"
import { Effect, HashMap, Layer, Logger, LogLevel, Option } from "effect"
import * as RequestLog from "../src/internal/RequestLog.js"
import { get, seed, send, stack } from "./fixtures.js"

const line = (fields: Partial<RequestLog.RequestLine>): RequestLog.RequestLine => ({
  requestId: "r",
  method: "GET",
  path: "/v1/apps",
  route: "/v1/apps",
  status: 200,
  ms: 3,
  client: "127.0.0.1",
  prefer: undefined,
  ...fields
})

/** A line as the tests read it: its level, its message and its `client` field. */
interface Captured {
  readonly level: string
  readonly message: string
  readonly client: Option.Option<unknown>
}

/** A logger that keeps each line's level, message and client, to provide in place of the default one. */
const captured = () => {
  const lines: Array<Captured> = []
  const logger = Logger.replace(
    Logger.defaultLogger,
    Logger.make(({ annotations, logLevel, message }) => {
      lines.push({
        level: logLevel.label,
        message: String(Array.isArray(message) ? message.join(" ") : message),
        client: HashMap.get(annotations, "client")
      })
    })
  )
  return { lines, logger }
}

/** The request lines among `lines` (`GET /v1/apps 200 3ms`). */
const requestLines = (lines: ReadonlyArray<Captured>) =>
  lines.filter((l) => /^(GET|POST) \/\S* \d{3} \d+ms$/.test(l.message))

/** Two requests through a server of `stack(options, level)`; the request lines logged, once its scope has closed. */
const linesOf = (options: Parameters<typeof stack>[0], level: LogLevel.LogLevel) => {
  const { lines, logger } = captured()
  return Effect.gen(function*() {
    const { alice } = yield* seed
    expect((yield* get("/v1/apps", alice.key)).status).toBe(200)
    expect((yield* get("/v1/nope", alice.key)).status).toBe(404)
  }).pipe(
    Effect.provide(stack(options, Layer.empty as never, level)),
    Effect.provide(logger),
    // The server's scope has closed, so what it queued is written.
    Effect.map(() => requestLines(lines))
  )
}

describe("request lines", () => {
  it("are Debug; Info for a 5xx, or a request of 1 s or more (a long poll: past its hold)", () => {
    const slowMs = 1000
    expect(RequestLog.levelOf(line({}), slowMs)).toBe(LogLevel.Debug)
    expect(RequestLog.levelOf(line({ status: 404 }), slowMs)).toBe(LogLevel.Debug)
    expect(RequestLog.levelOf(line({ status: 500 }), slowMs)).toBe(LogLevel.Info)
    expect(RequestLog.levelOf(line({ status: 503, ms: 0 }), slowMs)).toBe(LogLevel.Info)
    expect(RequestLog.levelOf(line({ ms: 999 }), slowMs)).toBe(LogLevel.Debug)
    expect(RequestLog.levelOf(line({ ms: 1000 }), slowMs)).toBe(LogLevel.Info)
    expect(RequestLog.levelOf(line({ ms: 20_300, prefer: "wait=20" }), slowMs)).toBe(LogLevel.Debug)
    expect(RequestLog.levelOf(line({ ms: 21_000, prefer: "wait=20" }), slowMs)).toBe(LogLevel.Info)
    expect(RequestLog.levelOf(line({ ms: 1_500, prefer: "respond-async, wait=5" }), slowMs)).toBe(LogLevel.Debug)
    // Probes: Debug, unready or slow (a storage check takes up to 2 s).
    expect(RequestLog.levelOf(line({ route: "/readyz", status: 503, ms: 2_000 }), slowMs)).toBe(LogLevel.Debug)
    expect(RequestLog.levelOf(line({ route: "/healthz", ms: 1_500 }), slowMs)).toBe(LogLevel.Debug)
  })

  it.scoped("a server at level Info logs no line for requests answered 2xx or 4xx in time", () =>
    Effect.map(linesOf({}, LogLevel.Info), (lines) => expect(lines).toEqual([])))

  it.scoped("a server at level Debug logs each request at DEBUG", () =>
    Effect.map(
      linesOf({}, LogLevel.Debug),
      (lines) =>
        expect(lines.map(({ level, message }) => ({ level, message }))).toEqual([
          { level: "DEBUG", message: expect.stringMatching(/^GET \/v1\/apps 200 \d+ms$/) },
          { level: "DEBUG", message: expect.stringMatching(/^GET \/v1\/nope 404 \d+ms$/) }
        ])
    ))

  it.scoped("a request that took slowRequest or longer is logged at INFO", () =>
    Effect.map(
      linesOf({ slowRequest: "0 millis" }, LogLevel.Info),
      (lines) => expect(lines.map((l) => l.level)).toEqual(["INFO", "INFO"])
    ))

  /** The `client` of the line of one request sent with `X-Forwarded-For: forwardedFor` to a server of `options`. */
  const clientOf = (options: Parameters<typeof stack>[0], forwardedFor: string) => {
    const { lines, logger } = captured()
    return Effect.gen(function*() {
      const { alice } = yield* seed
      const answer = yield* send(
        HttpClientRequest.get("/v1/apps").pipe(
          HttpClientRequest.setHeaders({ "x-api-key": alice.key, "x-forwarded-for": forwardedFor })
        )
      )
      expect(answer.status).toBe(200)
    }).pipe(
      Effect.provide(stack(options, Layer.empty as never, LogLevel.Debug)),
      Effect.provide(logger),
      Effect.map(() => requestLines(lines).map((l) => l.client))
    )
  }

  it.scoped("carry the socket's address as client, ignoring X-Forwarded-For, without trustProxy", () =>
    Effect.map(clientOf({}, "203.0.113.7"), (clients) => {
      expect(clients).toHaveLength(1)
      expect(clients[0]).toEqual(Option.some(expect.stringMatching(/^(::ffff:)?127\.0\.0\.1$/)))
    }))

  it.scoped("carry the address the trusted proxy appended as client, with trustProxy", () =>
    Effect.map(
      clientOf({ rateLimit: { trustProxy: true } }, "198.51.100.1, 203.0.113.7"),
      (clients) => expect(clients).toEqual([Option.some("203.0.113.7")])
    ))
})
