/**
 * The event stream of an execution over a real socket (docs/api.md#live-executions), served by
 * the Node listener: the SSE framing and headers, each event written as it comes, the heartbeat
 * (virtual time), `Last-Event-ID`, the same 401 and 404 as the poll, 406, the cap on open streams
 * per key, a client that goes away, a failure after the headers, and the `reconnect` event that
 * ends every stream when the app stops (`endStreams`); then the same stream as the
 * body of a web `Response` (`WebHandler`). The facade's `events` is fed by the test here
 * (`Feed`); `LiveExecutions.test.ts` runs the real one end to end.
 */
import { Appexec, type AppexecConfig, Errors } from "@appexec/core"
import { NodeListener } from "@appexec/platform-node"
import { TestHarness } from "@appexec/testing"
import { describe, expect, it } from "@effect/vitest"
import {
  Chunk,
  Clock,
  Context,
  Effect,
  Exit,
  Layer,
  Logger,
  LogLevel,
  Option,
  PubSub,
  Ref,
  Scope,
  Stream,
  Take,
  TestClock
} from "effect"
import { createServer } from "node:http"
import type { AddressInfo } from "node:net"
import { AppexecHttp, WebHandler } from "../src/index.js"
import { clientLayer, errorOf, get, seed, serverLayer, SigningKeysTest, TestServer } from "./fixtures.js"
import { type Frame, open, webFrames } from "./sse.js"

type Published = Take.Take<Appexec.LiveEvent, Errors.StorageError>

/** What the test sends to every stream the facade opens, and what the facade saw. */
class Feed extends Context.Tag("@appexec/http/test/Feed")<Feed, {
  readonly events: PubSub.PubSub<Published>
  /** The `lastEventId` of each stream asked for, in order. */
  readonly asked: Ref.Ref<ReadonlyArray<string | undefined>>
  /** Streams of the facade that ended (ran to their end or were interrupted). */
  readonly ended: Ref.Ref<number>
}>() {
  static readonly layer = Layer.effect(
    Feed,
    Effect.all({
      events: PubSub.unbounded<Published>(),
      asked: Ref.make<ReadonlyArray<string | undefined>>([]),
      ended: Ref.make(0)
    })
  )
}

/**
 * A follower of what `stream` gives, run in a fiber of its own until the follower is closed: `next`
 * answers what came since the last call (and fails with what the stream failed with), `onChange`
 * calls back as soon as something came or the stream ended.
 */
const followerOf = (stream: Stream.Stream<Appexec.LiveEvent, Errors.StorageError>) =>
  Effect.gen(function*() {
    const scope = yield* Scope.make()
    let buffer: Array<Appexec.LiveEvent> = []
    let end: Exit.Exit<void, Errors.StorageError> | undefined
    let waker: (() => void) | undefined
    const wake = () => {
      const w = waker
      waker = undefined
      w?.()
    }
    yield* Stream.runForEach(stream, (e) =>
      Effect.sync(() => {
        buffer.push(e)
        wake()
      })).pipe(
        Effect.exit,
        Effect.flatMap((exit) =>
          Effect.sync(() => {
            end = exit
            wake()
          })
        ),
        Effect.forkIn(scope)
      )
    const follower: Appexec.Follower = {
      next: Effect.suspend(() => {
        const events = buffer
        buffer = []
        if (end !== undefined && Exit.isFailure(end) && events.length === 0) return Effect.failCause(end.cause)
        return Effect.succeed({ events, ended: end !== undefined && Exit.isSuccess(end) })
      }),
      onChange: (callback) => {
        if (buffer.length > 0 || end !== undefined) {
          callback()
          return () => {}
        }
        waker = callback
        return () => {
          if (waker === callback) waker = undefined
        }
      },
      close: Scope.close(scope, Exit.void)
    }
    return follower
  })

/**
 * The facade with `follow` fed by `Feed`, after the same visibility check as the poll: an
 * `execution` snapshot (id 1, the poll answer's data) first, then what the test publishes.
 */
const fed = Layer.effect(
  Appexec.Appexec,
  Effect.gen(function*() {
    const appexec = yield* Appexec.Appexec
    const feed = yield* Feed
    const follow: Appexec.Appexec["Type"]["executions"]["follow"] = (principal, executionId, options) =>
      appexec.executions.getJson(principal, executionId).pipe(
        Effect.tap(() => Ref.update(feed.asked, (asked) => [...asked, options?.lastEventId])),
        Effect.flatMap((json) =>
          followerOf(
            Stream.unwrapScoped(
              Effect.map(PubSub.subscribe(feed.events), (published) =>
                Stream.concat(
                  Stream.make<Array<Appexec.LiveEvent>>({ event: "execution", id: "1", data: json }),
                  Stream.flattenTake(Stream.fromQueue(published))
                ))
            ).pipe(Stream.ensuring(Ref.update(feed.ended, (n) => n + 1)))
          )
        )
      )
    return { ...appexec, executions: { ...appexec.executions, follow } }
  })
)

/** The instance (memory, worker) with the fed facade and its settings `config`, unserved. */
const instance = (config: Partial<AppexecConfig.AppexecOptions> = {}) =>
  Layer.provideMerge(SigningKeysTest, Layer.provideMerge(fed, Layer.merge(TestHarness.layer({ config }), Feed.layer)))

/** The instance served by the Node listener (with `options`), and a client. */
const served = (config: Partial<AppexecConfig.AppexecOptions> = {}, options: NodeListener.ServeOptions = {}) =>
  clientLayer.pipe(Layer.provideMerge(serverLayer(options)), Layer.provideMerge(instance(config)))

/** An execution of `principal`'s workspace (the echo app). */
const executionOf = (principal: Appexec.Principal, appId: string) =>
  Effect.flatMap(
    Appexec.Appexec,
    (appexec) =>
      Effect.map(appexec.executions.start(principal, appId, { prompt: "p" }), (started) => started.executionId)
  )

/** Opens the event stream of `executionId` on the test server. */
const events = (executionId: string, headers: Record<string, string> = {}, query = "") =>
  Effect.flatMap(TestServer, ({ url }) => open(url, `/v1/executions/${executionId}/events${query}`, headers))

const publish = (published: Published) => Effect.flatMap(Feed, (feed) => PubSub.publish(feed.events, published))

const event = (id: string, name: Appexec.LiveEvent["event"], data: unknown): Appexec.LiveEvent => ({
  event: name,
  id,
  data: JSON.stringify(data)
})

/** The data of a frame that is an event. */
const dataOf = (frame: Option.Option<Frame>): string =>
  Option.isSome(frame) && frame.value._tag === "Event" ? frame.value.data : "(no event)"

const frameOf = (sent: Appexec.LiveEvent): Frame => ({ _tag: "Event", id: sent.id, event: sent.event, data: sent.data })

/**
 * What `look` finds, looking until it finds something and yielding to the event loop between
 * looks (no sleep, no virtual time); dies with `what` when it never does.
 */
const eventuallyFound = <A, E, R>(what: string, look: Effect.Effect<Option.Option<A>, E, R>) =>
  Effect.gen(function*() {
    for (let turn = 0; turn < 100_000; turn++) {
      const found = yield* look
      if (Option.isSome(found)) return found.value
      yield* Effect.yieldNow()
    }
    return yield* Effect.dieMessage(what)
  })

/** `eventuallyFound` of a condition. */
const eventually = <E, R>(what: string, done: Effect.Effect<boolean, E, R>) =>
  eventuallyFound(what, Effect.map(done, (holds) => holds ? Option.some(true) : Option.none()))

/** Until the server's stream waits with a heartbeat due `HEARTBEAT_SECONDS` from now. */
const heartbeatPending = Effect.flatMap(Clock.currentTimeMillis, (now) =>
  eventually(
    "no heartbeat is pending",
    Effect.map(TestClock.sleeps(), Chunk.some((due) => due === now + 15_000))
  ))

const sse = { accept: "text/event-stream" }

describe("GET /v1/executions/{executionId}/events", () => {
  it.scoped("answers 200 with the stream's headers and writes each event as it comes, until the stream ends", () =>
    Effect.gen(function*() {
      const { alice, echo } = yield* seed
      const id = yield* executionOf(alice, echo.appId)
      const stream = yield* events(id, { ...sse, "x-api-key": alice.key })
      expect(stream.status).toBe(200)
      expect(stream.headers["content-type"]).toBe("text/event-stream")
      expect(stream.headers["cache-control"]).toBe("no-cache")
      expect(stream.headers["x-accel-buffering"]).toBe("no")
      expect(stream.headers["x-request-id"]).toMatch(/^[0-9a-f-]{36}$/)
      expect(stream.headers["content-length"]).toBeUndefined()

      // The first event is the execution as the poll answers it.
      const first = yield* stream.next
      const poll = yield* get(`/v1/executions/${id}`, alice.key)
      expect(first).toEqual(Option.some({ _tag: "Event", id: "1", event: "execution", data: expect.any(String) }))
      expect(JSON.parse(dataOf(first))).toEqual((poll.body as { data: unknown }).data)

      // Each published event is on the wire before the next is published.
      const progress = event("2", "progress", { nodeId: "pause", fraction: 0.5, message: "half" })
      yield* publish(Take.of(progress))
      expect(yield* stream.next).toEqual(Option.some(frameOf(progress)))
      const log = event("3", "log", { at: "2026-11-26T00:00:00.000Z", level: "info", nodeId: "pause", message: "hi" })
      yield* publish(Take.of(log))
      expect(yield* stream.next).toEqual(Option.some(frameOf(log)))
      expect(yield* stream.raw).toContain(`\n\nid: 2\nevent: progress\ndata: ${progress.data}\n\nid: 3\nevent: log\n`)

      // The facade's stream ends: so does the answer.
      yield* publish(Take.end)
      expect(yield* stream.next).toEqual(Option.none())
      expect(yield* Effect.flatMap(Feed, (feed) => Ref.get(feed.ended))).toBe(1)
    }).pipe(Effect.provide(served())))

  it.scoped(`sends ': keep-alive' after ${15} s without an event, and counts again from each event`, () =>
    Effect.gen(function*() {
      const { alice, echo } = yield* seed
      const id = yield* executionOf(alice, echo.appId)
      const stream = yield* events(id, { ...sse, "x-api-key": alice.key })
      yield* stream.next
      yield* heartbeatPending
      yield* TestClock.adjust("15 seconds")
      expect(yield* stream.next).toEqual(Option.some({ _tag: "Comment", text: "keep-alive" }))
      yield* heartbeatPending
      yield* TestClock.adjust("10 seconds")
      const later = event("2", "progress", { nodeId: "n", fraction: 1, message: null })
      yield* publish(Take.of(later))
      expect(yield* stream.next).toEqual(Option.some(frameOf(later)))
      // Due 15 s after the event, not 15 s after the last heartbeat.
      yield* heartbeatPending
      yield* TestClock.adjust("15 seconds")
      expect(yield* stream.next).toEqual(Option.some({ _tag: "Comment", text: "keep-alive" }))
      expect(yield* stream.raw).toContain("\n\n: keep-alive\n\n")
    }).pipe(Effect.provide(served())))

  it.scoped("hands Last-Event-ID to the facade, or the lastEventId query parameter; the header wins", () =>
    Effect.gen(function*() {
      const { alice, echo } = yield* seed
      const id = yield* executionOf(alice, echo.appId)
      const key = { "x-api-key": alice.key }
      for (
        const [headers, query] of [
          [{ "last-event-id": "41" }, ""],
          [{}, "?lastEventId=7"],
          [{ "last-event-id": "41" }, "?lastEventId=7"],
          [{}, ""]
        ] as const
      ) {
        const stream = yield* events(id, { ...key, ...headers }, query)
        expect(stream.status).toBe(200)
        yield* stream.next
        yield* stream.close
      }
      const feed = yield* Feed
      expect(yield* Ref.get(feed.asked)).toEqual(["41", "7", "41", undefined])
    }).pipe(Effect.provide(served())))

  it.scoped("answers as the poll does: 401 without a key, 404 for another workspace's execution or a malformed id", () =>
    Effect.gen(function*() {
      const { alice, bob, echo } = yield* seed
      const id = yield* executionOf(alice, echo.appId)
      const anonymous = yield* events(id, sse)
      expect(anonymous.status).toBe(401)
      expect(anonymous.headers["www-authenticate"]).toContain("Bearer")
      expect(errorOf(JSON.parse(yield* anonymous.text)).code).toBe("unauthorized")
      for (const [executionId, key] of [[id, bob.key], ["not-a-uuid", alice.key], [crypto.randomUUID(), alice.key]]) {
        const missing = yield* events(executionId!, { ...sse, "x-api-key": key! })
        expect(missing.status).toBe(404)
        expect(missing.headers["content-type"]).toBe("application/json")
        expect(errorOf(JSON.parse(yield* missing.text)).code).toBe("not_found")
      }
      const feed = yield* Feed
      expect(yield* Ref.get(feed.asked)).toEqual([])
    }).pipe(Effect.provide(served())))

  it.scoped("answers 406 to an Accept without text/event-stream; */*, text/* or none is fine", () =>
    Effect.gen(function*() {
      const { alice, echo } = yield* seed
      const id = yield* executionOf(alice, echo.appId)
      for (const accept of ["application/json", "text/html, application/xml;q=0.9", "text/event-stream;q=0"]) {
        const refused = yield* events(id, { accept, "x-api-key": alice.key })
        expect(refused.status, accept).toBe(406)
        const error = errorOf(JSON.parse(yield* refused.text))
        expect(error.code).toBe("invalid_request")
        expect(error.message).toContain("text/event-stream")
      }
      for (const accept of ["*/*", "text/*", "text/html, */*;q=0.1", undefined]) {
        const stream = yield* events(id, { "x-api-key": alice.key, ...(accept === undefined ? {} : { accept }) })
        expect(stream.status, accept).toBe(200)
        yield* stream.close
      }
    }).pipe(Effect.provide(served())))

  it.scoped("caps open streams per key: 429 beyond maxStreamsPerKey, a slot back when a client goes away", () =>
    Effect.gen(function*() {
      const { alice, bob, echo } = yield* seed
      const id = yield* executionOf(alice, echo.appId)
      const headers = { ...sse, "x-api-key": alice.key }
      const first = yield* events(id, headers)
      const second = yield* events(id, headers)
      expect([first.status, second.status]).toEqual([200, 200])
      const third = yield* events(id, headers)
      expect(third.status).toBe(429)
      expect(third.headers["retry-after"]).toBe("15")
      const error = errorOf(JSON.parse(yield* third.text))
      expect(error.code).toBe("rate_limited")
      expect(error.message).toContain("2 event streams")
      // Per key: another key opens its own.
      const other = yield* events(yield* executionOf(bob, echo.appId), { ...sse, "x-api-key": bob.key })
      expect(other.status).toBe(200)

      // The first client goes away: the server interrupts its stream and gives the place back.
      yield* first.next
      yield* first.close
      const feed = yield* Feed
      yield* eventually(
        "the stream of the client that went away was not interrupted",
        Effect.map(Ref.get(feed.ended), (n) => n === 1)
      )
      yield* eventually(
        "the place of the closed stream was not given back",
        Effect.map(events(id, headers), (opened) => opened.status === 200)
      )
      // And a stream that ends gives its place back too.
      yield* publish(Take.end)
      yield* eventually("the ended streams were not counted", Effect.map(Ref.get(feed.ended), (n) => n === 4))
      for (let i = 0; i < 2; i++) expect((yield* events(id, headers)).status).toBe(200)
    }).pipe(Effect.provide(served({ maxStreamsPerKey: 2 }))))

  it.scoped("a stream counts once against the rate limit, however many events it sends", () =>
    Effect.gen(function*() {
      const { alice, echo } = yield* seed
      const id = yield* executionOf(alice, echo.appId)
      const stream = yield* events(id, { ...sse, "x-api-key": alice.key })
      expect(stream.headers["ratelimit-remaining"]).toBe("1")
      yield* stream.next
      for (let i = 2; i < 12; i++) {
        const sent = event(String(i), "progress", { nodeId: "n", fraction: i / 100, message: null })
        yield* publish(Take.of(sent))
        expect(yield* stream.next).toEqual(Option.some(frameOf(sent)))
      }
      const next = yield* get(`/v1/executions/${id}`, alice.key)
      expect([next.status, next.headers["ratelimit-remaining"]]).toEqual([200, "0"])
      expect((yield* get(`/v1/executions/${id}`, alice.key)).status).toBe(429)
    }).pipe(Effect.provide(served({}, { rateLimit: { limit: 2 } }))))

  it.scoped("a storage failure after the headers ends the answer, logged with the request id; never a 500", () => {
    const logged: Array<{ message: string; requestId: unknown }> = []
    const capture = Logger.make(({ annotations, message }) => {
      logged.push({ message: String(message), requestId: Object.fromEntries(annotations)["requestId"] })
    })
    return Effect.gen(function*() {
      const { alice, echo } = yield* seed
      const id = yield* executionOf(alice, echo.appId)
      const stream = yield* events(id, { ...sse, "x-api-key": alice.key })
      yield* stream.next
      yield* publish(Take.fail(new Errors.StorageError({ operation: "reports.after", cause: new Error("gone") })))
      expect(yield* stream.next).toEqual(Option.none())
      expect(stream.status).toBe(200)
      expect(logged.filter((line) => line.message.includes("event stream ended by a failure"))).toEqual([
        { message: expect.any(String), requestId: stream.headers["x-request-id"] }
      ])
    }).pipe(
      Effect.provide(served()),
      Effect.provide(Logger.replace(Logger.defaultLogger, capture)),
      Effect.provide(Logger.minimumLogLevel(LogLevel.Info))
    )
  })
})

describe("the event stream through the web handler", () => {
  /** `GET` of the event stream of `executionId` through `handler`. */
  const request = (handler: WebHandler.Handler, executionId: string, key: string, signal?: AbortSignal) =>
    Effect.promise(() =>
      handler(
        new Request(`http://appexec.test/v1/executions/${executionId}/events`, {
          headers: { accept: "text/event-stream", "x-api-key": key },
          ...(signal === undefined ? {} : { signal })
        }),
        { clientAddress: "127.0.0.1" }
      )
    )

  it.scoped("answers a Response whose body gets each event as it comes, and ends with the stream", () =>
    Effect.gen(function*() {
      const { alice, echo } = yield* seed
      const id = yield* executionOf(alice, echo.appId)
      const handler = yield* WebHandler.make()
      const response = yield* request(handler, id, alice.key)
      expect(response.status).toBe(200)
      expect(response.headers.get("content-type")).toBe("text/event-stream")
      expect(response.headers.get("cache-control")).toBe("no-cache")
      expect(response.headers.get("x-accel-buffering")).toBe("no")
      const frames = webFrames(response.body!)
      expect(JSON.parse(dataOf(yield* frames.next))).toMatchObject({ executionId: id })
      const progress = event("2", "progress", { nodeId: "n", fraction: 0.25, message: null })
      yield* publish(Take.of(progress))
      expect(yield* frames.next).toEqual(Option.some(frameOf(progress)))
      yield* heartbeatPending
      yield* TestClock.adjust("15 seconds")
      expect(yield* frames.next).toEqual(Option.some({ _tag: "Comment", text: "keep-alive" }))
      yield* publish(Take.end)
      expect(yield* frames.next).toEqual(Option.none())
    }).pipe(Effect.provide(instance())))

  it.scoped("a reader that cancels, or a request that aborts, interrupts the stream and gives its place back", () =>
    Effect.gen(function*() {
      const { alice, echo } = yield* seed
      const id = yield* executionOf(alice, echo.appId)
      const handler = yield* WebHandler.make()
      const feed = yield* Feed
      const first = yield* request(handler, id, alice.key)
      const frames = webFrames(first.body!)
      yield* frames.next
      expect((yield* request(handler, id, alice.key)).status).toBe(429)
      yield* frames.cancel
      yield* eventually("the canceled stream was not interrupted", Effect.map(Ref.get(feed.ended), (n) => n === 1))

      const aborted = new AbortController()
      const second = yield* eventuallyFound(
        "the place of the canceled stream was not given back",
        Effect.map(
          request(handler, id, alice.key, aborted.signal),
          (response) => response.status === 200 ? Option.some(response) : Option.none()
        )
      )
      yield* webFrames(second.body!).next
      aborted.abort()
      yield* eventually("the aborted stream was not interrupted", Effect.map(Ref.get(feed.ended), (n) => n === 2))
      yield* eventually(
        "the place of the aborted stream was not given back",
        Effect.map(request(handler, id, alice.key), (response) => response.status === 200)
      )
    }).pipe(Effect.provide(instance({ maxStreamsPerKey: 1 }))))

  it.scoped("streams end when the app stops", () =>
    Effect.gen(function*() {
      const { alice, echo } = yield* seed
      const id = yield* executionOf(alice, echo.appId)
      const scope = yield* Scope.make()
      const handler = yield* Scope.extend(WebHandler.make(), scope)
      const frames = webFrames((yield* request(handler, id, alice.key)).body!)
      yield* frames.next
      yield* Scope.close(scope, Exit.void)
      expect(yield* frames.next).toEqual(Option.some(reconnectFrame))
      expect(yield* frames.next).toEqual(Option.none())
      const feed = yield* Feed
      expect(yield* Ref.get(feed.ended)).toBe(1)
    }).pipe(Effect.provide(instance())))

  it.scoped("endStreams ends every open stream with a reconnect event, and a stream opened later too", () =>
    Effect.gen(function*() {
      const { alice, echo } = yield* seed
      const id = yield* executionOf(alice, echo.appId)
      const app = yield* AppexecHttp.make()
      const server = createServer(NodeListener.fromApp(app))
      yield* Effect.acquireRelease(
        Effect.async<void>((resume) => void server.listen(0, "127.0.0.1", () => resume(Effect.void))),
        () =>
          Effect.sync(() => server.closeAllConnections()).pipe(
            Effect.zipRight(Effect.async<void>((resume) => void server.close(() => resume(Effect.void))))
          )
      )
      const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
      const headers = { ...sse, "x-api-key": alice.key }
      const first = yield* open(url, `/v1/executions/${id}/events`, headers)
      expect((yield* first.next).pipe(Option.map((frame) => frame._tag))).toEqual(Option.some("Event"))
      yield* heartbeatPending
      yield* app.endStreams
      expect(yield* first.next).toEqual(Option.some(reconnectFrame))
      expect(yield* first.next).toEqual(Option.none())
      expect(yield* first.raw).toContain("\n\nevent: reconnect\nretry: 1000\ndata: ")
      // Opened after: what it has at once, then the reconnect event and the end.
      const later = yield* open(url, `/v1/executions/${id}/events`, headers)
      const frames: Array<Frame> = []
      for (let frame = yield* later.next; Option.isSome(frame); frame = yield* later.next) frames.push(frame.value)
      expect(frames.at(-1)).toEqual(reconnectFrame)
      expect(frames.slice(0, -1).every((frame) => frame._tag === "Event" && frame.event === "execution")).toBe(true)
      expect(yield* Effect.flatMap(Feed, (feed) => Ref.get(feed.ended))).toBe(2)
    }).pipe(Effect.provide(instance())))
})

/** The last frame of a stream whose app stops. */
const reconnectFrame: Frame = {
  _tag: "Event",
  id: "",
  event: "reconnect",
  data: JSON.stringify({ reason: "the server is stopping; reconnect with Last-Event-ID" })
}
