/**
 * Live executions over a real socket, end to end on the real facade (docs/api.md#live-executions):
 * an app with a fast branch and a slow one, followed by a client of the event stream from its
 * start to its end; its logs read back as JSON; and a client that goes away leaves no waiter on
 * the execution behind. Virtual time: the slow branch waits only when the test moves the clock.
 */
import { Live } from "@appexec/api"
import { Appexec, ExecutionEvents } from "@appexec/core"
import { TestApps, TestHarness } from "@appexec/testing"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Fiber, Layer, Option, Schema, TestClock } from "effect"
import { clientLayer, errorOf, get, serverLayer, SigningKeysTest, TestServer } from "./fixtures.js"
import { eventsUntilEnd, type Frame, open } from "./sse.js"

const { branches, chatty } = TestApps

const live = clientLayer.pipe(
  Layer.provideMerge(serverLayer()),
  Layer.provideMerge(SigningKeysTest),
  Layer.provideMerge(TestHarness.layer({ nodes: [chatty] }))
)

type Event = Extract<Frame, { _tag: "Event" }>

interface Snapshot {
  readonly status: string
  readonly outputs: ReadonlyArray<{ readonly id: string; readonly status: string; readonly value: string | null }>
}

const snapshotOf = (event: Event): Snapshot => JSON.parse(event.data)

const statusesOf = (event: Event) =>
  Object.fromEntries(snapshotOf(event).outputs.map((output) => [output.id, output.status]))

/**
 * Until `done` holds, yielding to the event loop between looks (no sleep); dies with `what` when
 * it never does.
 */
const eventually = <E, R>(what: string, done: Effect.Effect<boolean, E, R>) =>
  Effect.gen(function*() {
    for (let turn = 0; turn < 100_000; turn++) {
      if (yield* done) return
      yield* Effect.yieldNow()
    }
    return yield* Effect.dieMessage(what)
  })

const setup = Effect.gen(function*() {
  const appexec = yield* Appexec.Appexec
  const app = yield* appexec.apps.import(branches)
  const alice = yield* TestHarness.signIn("alice")
  const bob = yield* TestHarness.signIn("bob")
  const started = yield* appexec.executions.start(alice, app.appId, { prompt: "hi" })
  const { url } = yield* TestServer
  return { alice, bob, id: started.executionId, url }
})

describe("live executions over a socket", () => {
  it.scoped(
    "a client sees the execution running, the fast output while the slow branch waits, progress, logs, the end, then the stream ends",
    () =>
      Effect.gen(function*() {
        const { alice, id, url } = yield* setup
        const stream = yield* open(url, `/v1/executions/${id}/events`, {
          accept: "text/event-stream",
          "x-api-key": alice.key
        })
        expect(stream.status).toBe(200)
        // No time passes until the fast output shows while the execution still runs.
        const seen: Array<Event> = []
        for (;;) {
          const frame = yield* stream.next
          if (Option.isNone(frame)) return yield* Effect.dieMessage(`the stream ended early: ${JSON.stringify(seen)}`)
          if (frame.value._tag !== "Event") continue
          seen.push(frame.value)
          if (frame.value.event !== "execution") continue
          const statuses = statusesOf(frame.value)
          if (statuses["fast"] === "completed") {
            expect(snapshotOf(frame.value).status).toBe("running")
            expect(statuses["slow"]).toBe("pending")
            break
          }
        }
        expect(seen[0]!.event).toBe("execution")
        expect(["queued", "running"]).toContain(snapshotOf(seen[0]!).status)

        // Then time passes until the stream ends.
        const rest = yield* Effect.fork(eventsUntilEnd(stream))
        yield* eventually(
          "the stream did not end",
          Effect.zipRight(TestClock.adjust("500 millis"), Effect.map(Fiber.poll(rest), Option.isSome))
        )
        const events = [...seen, ...(yield* Fiber.join(rest))]

        const ids = events.map((e) => Number(e.id))
        expect(ids.every((n, i) => Number.isSafeInteger(n) && (i === 0 || n > ids[i - 1]!))).toBe(true)
        const progress = events.filter((e) => e.event === "progress").map((e) => JSON.parse(e.data))
        expect(progress.length).toBeGreaterThan(0)
        expect(progress.every((p) => p.nodeId === "wait" && p.fraction >= 0 && p.fraction <= 1)).toBe(true)
        const logs = events.filter((e) => e.event === "log").map((e) => JSON.parse(e.data))
        expect(logs.map((l) => [l.nodeId, l.level, l.message])).toEqual([
          ["talk", "info", "line 1"],
          ["talk", "warn", "line 2"],
          ["talk", "info", "line 3"]
        ])
        const last = events[events.length - 1]!
        expect(last.event).toBe("execution")
        expect(snapshotOf(last).status).toBe("completed")
        // The terminal snapshot is the poll answer.
        const poll = yield* get(`/v1/executions/${id}`, alice.key)
        expect(snapshotOf(last)).toEqual((poll.body as { data: unknown }).data)
      }).pipe(Effect.provide(live))
  )

  it.scoped("GET /v1/executions/{id}/logs answers the kept lines; 404 for another workspace or a malformed id", () =>
    Effect.gen(function*() {
      const { alice, bob, id } = yield* setup
      const appexec = yield* Appexec.Appexec
      const finished = yield* Effect.fork(appexec.executions.await(id))
      yield* eventually(
        "the execution did not finish",
        Effect.zipRight(TestClock.adjust("500 millis"), Effect.map(Fiber.poll(finished), Option.isSome))
      )
      const answer = yield* get(`/v1/executions/${id}/logs`, alice.key)
      expect(answer.status).toBe(200)
      expect(answer.headers["content-type"]).toBe("application/json")
      const decoded = Schema.decodeUnknownSync(Live.LogsResponse)(answer.body)
      expect(decoded.data.map((line) => [line.nodeId, line.level, line.message])).toEqual([
        ["talk", "info", "line 1"],
        ["talk", "warn", "line 2"],
        ["talk", "info", "line 3"]
      ])
      expect((answer.body as { data: Array<{ at: string }> }).data[0]!.at).toMatch(/^\d{4}-\d\d-\d\dT.*Z$/)

      for (const [path, key] of [[id, bob.key], ["not-a-uuid", alice.key], [crypto.randomUUID(), alice.key]]) {
        const missing = yield* get(`/v1/executions/${path}/logs`, key)
        expect(missing.status).toBe(404)
        expect(errorOf(missing.body).code).toBe("not_found")
      }
      const anonymous = yield* get(`/v1/executions/${id}/logs`)
      expect(anonymous.status).toBe(401)
    }).pipe(Effect.provide(live)))

  it.scoped("a client that goes away leaves no waiter on the execution behind", () =>
    Effect.gen(function*() {
      const { alice, id, url } = yield* setup
      const events = yield* ExecutionEvents.ExecutionEvents
      const watching = Effect.map(events.watched, (watched) => watched.some((watchedId) => watchedId === id))
      const stream = yield* open(url, `/v1/executions/${id}/events`, { "x-api-key": alice.key })
      yield* stream.next
      yield* eventually("the stream does not watch the execution", watching)
      yield* stream.close
      yield* eventually("the stream still watches the execution", Effect.map(watching, (w) => !w))
    }).pipe(Effect.provide(live)))
})
