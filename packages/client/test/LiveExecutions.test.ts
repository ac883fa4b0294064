/**
 * The client's live executions against a served instance (`ServedInstance`, a real socket): the
 * typed events of an app with a fast branch and a slow one, from the first snapshot to the end;
 * `run` on the stream with no poll; a connection cut after its first chunk, resumed with
 * `Last-Event-ID`; the fall-back to polling when the route is missing; the logs read back.
 * Virtual time: the slow branch waits only when the test moves the clock.
 */
import { Appexec } from "@appexec/core"
import { TestApps, TestHarness } from "@appexec/testing"
import { describe, expect, it } from "@effect/vitest"
import { Chunk, Effect, Fiber, Option, Ref, Stream, TestClock } from "effect"
import { AppexecClient, type EventStream } from "../src/index.js"
import { serve } from "./ServedInstance.js"

const { branches, chatty } = TestApps

const instance = TestHarness.layer({ nodes: [chatty] })

/** The served instance with the Branches app besides. */
const served = Effect.gen(function*() {
  const base = yield* serve()
  const app = yield* Effect.orDie((yield* Appexec.Appexec).apps.import(branches, { owner: { public: true } }))
  return { ...base, branchesAppId: app.appId }
})

/** A `fetch` that records each request as `METHOD path [last-event-id]`, and may change a response. */
const frontFetch = (change: (path: string, n: number, response: Response) => Response = (_, __, r) => r) => {
  const calls: Array<string> = []
  const fetch: typeof globalThis.fetch = async (input, init) => {
    const request = new Request(input, init)
    const path = new URL(request.url).pathname
    const lastEventId = request.headers.get("last-event-id")
    calls.push(`${request.method} ${path}${lastEventId === null ? "" : ` ${lastEventId}`}`)
    return change(path, calls.filter((c) => c.startsWith(`GET ${path}`)).length, await globalThis.fetch(request))
  }
  return { calls, fetch }
}

/** `response` with a body that gives its first chunk, then breaks as a cut connection does. */
const cutAfterFirstChunk = (response: Response): Response => {
  const reader = response.body!.getReader()
  let sent = false
  const body = new ReadableStream<Uint8Array>({
    pull: async (controller) => {
      if (sent) {
        await reader.cancel()
        return controller.error(new TypeError("terminated"))
      }
      const read = await reader.read()
      sent = true
      if (read.done) controller.close()
      else controller.enqueue(read.value)
    }
  })
  return new Response(body, { status: response.status, headers: response.headers })
}

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

/** Moves the clock a second at a time until `fiber` is done (a minute at most), and joins it. */
const driveToEnd = <A, E>(fiber: Fiber.Fiber<A, E>) =>
  Effect.gen(function*() {
    for (let second = 0; second < 60 && Option.isNone(yield* Fiber.poll(fiber)); second++) {
      yield* TestClock.adjust("1 second")
      for (let turn = 0; turn < 100; turn++) yield* Effect.yieldNow()
    }
    return yield* Fiber.join(fiber)
  })

/** Follows the execution's stream into `seen`, in a fiber. */
const follow = (client: AppexecClient.AppexecClientService, executionId: string) =>
  Effect.gen(function*() {
    const seen = yield* Ref.make<ReadonlyArray<EventStream.LiveEvent>>([])
    const fiber = yield* Effect.fork(
      Stream.runCollect(Stream.tap(client.stream(executionId), (e) => Ref.update(seen, (all) => [...all, e])))
    )
    /** Until an event of `seen` matches. */
    const until = (what: string, found: (e: EventStream.LiveEvent) => boolean) =>
      eventually(what, Effect.map(Ref.get(seen), (all) => all.some(found)))
    return { fiber, seen, until }
  })

const outputStatuses = (event: EventStream.LiveEvent) =>
  event.event === "execution" ? event.data.outputs.map((o) => `${o.id}:${o.status}`).join(" ") : ""

describe("live executions against a served instance", () => {
  it.scoped("stream: running with the fast output completed, progress, log lines, the terminal execution, the end", () =>
    Effect.gen(function*() {
      const { baseUrl, apiKey, branchesAppId } = yield* served
      const client = yield* AppexecClient.make({ baseUrl, apiKey })
      const started = yield* client.executions.start(branchesAppId, { prompt: "hi" })
      const following = yield* follow(client, started.executionId)
      // The fast output settles with no virtual time passing; the slow branch waits for the clock.
      yield* following.until(
        "the fast output never completed while running",
        (e) => outputStatuses(e) === "fast:completed slow:pending"
      )
      const events = Chunk.toReadonlyArray(yield* driveToEnd(following.fiber))

      const ids = events.map((e) => Number(e.id))
      expect(ids).toEqual([...ids].sort((a, b) => a - b))
      expect(new Set(ids).size).toBe(ids.length)
      const running = events.find((e) => outputStatuses(e) === "fast:completed slow:pending")
      expect(running?.event === "execution" && running.data.status).toBe("running")
      const fractions = events.flatMap((
        e
      ) => (e.event === "progress" && e.data.nodeId === "wait" ? [e.data.fraction] : []))
      expect(fractions.length).toBeGreaterThan(1)
      expect(fractions.at(-1)).toBe(1)
      const lines = events.flatMap((
        e
      ) => (e.event === "log" ? [`${e.data.nodeId} ${e.data.level} ${e.data.message}`] : []))
      expect(lines).toEqual(["talk info line 1", "talk warn line 2", "talk info line 3"])
      const last = events.at(-1)
      expect(last?.event === "execution" && [last.data.status, outputStatuses(last)]).toEqual([
        "completed",
        "fast:completed slow:completed"
      ])

      const logs = yield* client.executions.logs(started.executionId)
      expect(logs.map((l) => l.message)).toEqual(["line 1", "line 2", "line 3"])
      const missing = yield* Effect.flip(client.executions.logs(crypto.randomUUID()))
      expect(missing).toMatchObject({ _tag: "ApiError", status: 404, code: "not_found" })
    }).pipe(Effect.provide(instance)))

  it.scoped("run follows the stream: onEvent hears the progress and the logs, and nothing is polled", () =>
    Effect.gen(function*() {
      const { baseUrl, apiKey } = yield* served
      const { calls, fetch } = frontFetch()
      const client = yield* AppexecClient.make({ baseUrl, apiKey, fetch })
      const heard = yield* Ref.make<ReadonlyArray<string>>([])
      const running = yield* Effect.fork(
        client.run("Branches", { prompt: "hi" }, {
          onEvent: (e) => Ref.update(heard, (all) => [...all, e.event])
        })
      )
      const done = yield* driveToEnd(running)
      expect(done.status).toBe("completed")
      expect(yield* Ref.get(heard)).toEqual(expect.arrayContaining(["execution", "progress", "log"]))
      expect(calls.filter((c) => c.startsWith("GET /v1/executions/"))).toEqual([
        `GET /v1/executions/${done.executionId}/events`
      ])
    }).pipe(Effect.provide(instance)))

  it.scoped("a connection cut after its first chunk resumes with Last-Event-ID, repeating nothing", () =>
    Effect.gen(function*() {
      const { baseUrl, apiKey, branchesAppId } = yield* served
      const { calls, fetch } = frontFetch((path, n, response) =>
        path.endsWith("/events") && n === 1 ? cutAfterFirstChunk(response) : response
      )
      const client = yield* AppexecClient.make({ baseUrl, apiKey, fetch, retry: { baseDelayMs: 0 } })
      const started = yield* client.executions.start(branchesAppId, { prompt: "hi" })
      const following = yield* follow(client, started.executionId)
      const events = `GET /v1/executions/${started.executionId}/events`
      yield* eventually("the stream was never opened again", Effect.sync(() => calls.length >= 3))
      const first = (yield* Ref.get(following.seen))[0]
      const all = Chunk.toReadonlyArray(yield* driveToEnd(following.fiber))
      expect(all[0]).toEqual(first)
      // The first connection gave one chunk (the first event, at least), the second resumed after its last.
      const resumedAfter = calls[2]!.slice(events.length + 1)
      expect(calls.slice(1, 3)).toEqual([events, `${events} ${resumedAfter}`])
      expect(all.some((e) => e.id === resumedAfter)).toBe(true)
      const ids = all.map((e) => Number(e.id))
      expect(ids).toEqual([...new Set(ids)].sort((a, b) => a - b))
      expect(all.at(-1)?.event === "execution" && all.at(-1)?.data).toMatchObject({ status: "completed" })
      expect(all.filter((e) => e.event === "log").length).toBe(3)
    }).pipe(Effect.provide(instance)))

  it.scoped("on a server without the route (404 route not found), run polls, with the same result", () =>
    Effect.gen(function*() {
      const { baseUrl, apiKey } = yield* served
      // The stream is asked for where this server has no endpoint: what an older appexec answers.
      const { calls, fetch } = frontFetch()
      const elsewhere: typeof globalThis.fetch = (input, init) => {
        const request = new Request(input, init)
        return fetch(request.url.endsWith("/events") ? new Request(`${request.url}-not-here`, request) : request)
      }
      const client = yield* AppexecClient.make({ baseUrl, apiKey, fetch: elsewhere })
      const done = yield* driveToEnd(yield* Effect.fork(client.run("Greeting", { who: "Ada" }, { interval: 0 })))
      expect(done.status).toBe("completed")
      expect(done.outputs.map((o) => o.value)).toEqual(["Hello Ada, in a warm tone."])
      const reads = calls.filter((c) => c.startsWith("GET /v1/executions/"))
      expect(reads[0]).toBe(`GET /v1/executions/${done.executionId}/events-not-here`)
      expect(reads.slice(1).every((c) => c === `GET /v1/executions/${done.executionId}`)).toBe(true)
      expect(reads.length).toBeGreaterThan(1)
    }).pipe(Effect.provide(instance)))
})
