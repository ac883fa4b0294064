/**
 * Long polling on change over a real socket (docs/api.md#long-polling): `Prefer: wait=N` with
 * `If-None-Match` answers at the execution's first change (here queued → running), and 304 with
 * `Preference-Applied` when nothing changes for N seconds.
 */
import { Ids } from "@appexec/api"
import { Appexec, ExecutionEvents } from "@appexec/core"
import { TestHarness } from "@appexec/testing"
import { HttpClientRequest } from "@effect/platform"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Fiber, Layer, Option, TestClock } from "effect"
import { clientLayer, send, serverLayer, SigningKeysTest, slowApp } from "./fixtures.js"

/** The served instance, running one execution of a workspace at a time: the next one stays queued. */
const oneAtATime = clientLayer.pipe(
  Layer.provideMerge(serverLayer()),
  Layer.provideMerge(SigningKeysTest),
  Layer.provideMerge(TestHarness.layer({ config: { maxRunningPerWorkspace: 1 } }))
)

const withKey = (key: string, headers: Record<string, string> = {}) =>
  HttpClientRequest.setHeaders({ "x-api-key": key, ...headers })

const start = (appId: string, key: string) =>
  Effect.map(
    send(
      HttpClientRequest.post(`/v1/apps/${appId}/executions`).pipe(
        withKey(key),
        HttpClientRequest.bodyText(JSON.stringify({ inputs: { prompt: "p" } }), "application/json")
      )
    ),
    (answer) => statusOf(answer.body).executionId
  )

const poll = (executionId: string, key: string, headers: Record<string, string> = {}) =>
  send(HttpClientRequest.get(`/v1/executions/${executionId}`).pipe(withKey(key, headers)))

const statusOf = (body: unknown) => (body as { readonly data: { executionId: string; status: string } }).data

/**
 * Until `done` holds, yielding to the event loop between looks (a latch on state the test can
 * read, no sleep, no virtual time); dies with `what` when it never does.
 */
const eventually = <E, R>(what: string, done: Effect.Effect<boolean, E, R>) =>
  Effect.gen(function*() {
    for (let turn = 0; turn < 100_000; turn++) {
      if (yield* done) return
      yield* Effect.yieldNow()
    }
    return yield* Effect.dieMessage(what)
  })

/** Until the server holds a request for `executionId` (waiting for its end or for a change). */
const heldByServer = (executionId: string) =>
  Effect.flatMap(ExecutionEvents.ExecutionEvents, (events) =>
    eventually(
      `no request is held for ${executionId}`,
      Effect.map(
        Effect.zip(events.waited, events.watched),
        ([waited, watched]) => [...waited, ...watched].includes(Ids.ExecutionId.make(executionId))
      )
    ))

describe("Prefer: wait=N with If-None-Match", () => {
  it.scoped("answers as soon as the execution starts running, long before it finishes", () =>
    Effect.gen(function*() {
      const appexec = yield* Appexec.Appexec
      const slow = yield* appexec.apps.import(slowApp, { owner: { public: true } })
      const { key } = yield* TestHarness.signIn("alice")
      const first = yield* start(slow.appId, key)
      const second = yield* start(slow.appId, key)
      const queued = yield* poll(second, key)
      expect(statusOf(queued.body).status).toBe("queued")
      const etag = queued.headers["etag"]!

      const held = yield* Effect.fork(poll(second, key, { prefer: "wait=10", "if-none-match": etag }))
      yield* heldByServer(second)
      yield* TestClock.adjust("5 seconds")
      expect(Option.isNone(yield* Fiber.poll(held))).toBe(true)
      // The first ends (canceled): the second starts, 55 s before it would finish.
      yield* appexec.executions.cancel(first)
      yield* eventually(
        "the held request did not answer when the execution started",
        Effect.map(Fiber.poll(held), Option.isSome)
      )
      const answer = yield* Fiber.join(held)
      expect(answer.status).toBe(200)
      expect(answer.headers["preference-applied"]).toBe("wait=10")
      expect(statusOf(answer.body).status).toBe("running")
      expect(answer.headers["etag"]).not.toBe(etag)

      // Unchanged for N seconds: 304 with no body, the same ETag and Preference-Applied.
      const running = answer.headers["etag"]!
      const unchanged = yield* Effect.fork(poll(second, key, { prefer: "wait=3", "if-none-match": running }))
      yield* heldByServer(second)
      yield* TestClock.adjust("3 seconds")
      const notModified = yield* Fiber.join(unchanged)
      expect(notModified.status).toBe(304)
      expect(notModified.body).toBeUndefined()
      expect(notModified.headers["etag"]).toBe(running)
      expect(notModified.headers["preference-applied"]).toBe("wait=3")

      // An ETag that is not the current one is answered at once, whatever the wait.
      const stale = yield* poll(second, key, { prefer: "wait=60", "if-none-match": etag })
      expect(stale.status).toBe(200)
      expect(stale.headers["etag"]).toBe(running)
    }).pipe(Effect.provide(oneAtATime)))
})
