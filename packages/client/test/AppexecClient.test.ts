import { type Execution } from "@appexec/api"
import { Appexec, ExecutionStore } from "@appexec/core"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Either, Fiber, Option, Queue, Ref, TestClock } from "effect"
import { AppexecClient, type ClientConfig, Outputs } from "../src/index.js"
import { instance, serve, type Served } from "./ServedInstance.js"

/** A `fetch` that counts the requests it forwards, by `METHOD path`. */
const countingFetch = () => {
  const calls: Array<string> = []
  const fetch: typeof globalThis.fetch = (input, init) => {
    const url = new URL(input instanceof Request ? input.url : input.toString())
    calls.push(`${init?.method ?? "GET"} ${url.pathname}`)
    return globalThis.fetch(input, init)
  }
  return { calls, fetch }
}

const clientOf = (served: Served, config: Partial<ClientConfig.ClientConfig> = {}) =>
  AppexecClient.make({ baseUrl: served.baseUrl, apiKey: served.apiKey, ...config })

/**
 * Runs `run` to its end in virtual time: after every status read it moves the clock by the
 * longest polling interval, so that the next read (and the app's own delay) come due.
 */
const driveToEnd = <A, E>(start: (onStatus: (e: Execution.Execution) => Effect.Effect<void>) => Effect.Effect<A, E>) =>
  Effect.gen(function*() {
    const statuses = yield* Queue.unbounded<Execution.Execution>()
    const fiber = yield* Effect.fork(Effect.either(start((e) => Queue.offer(statuses, e))))
    const seen: Array<Execution.ExecutionStatus> = []
    while (true) {
      const next = yield* Effect.raceFirst(
        Effect.asSome(Queue.take(statuses)),
        Effect.as(Fiber.await(fiber), Option.none())
      )
      if (Option.isNone(next)) break
      seen.push(next.value.status)
      if (next.value.status === "completed" || next.value.status === "failed") break
      yield* TestClock.adjust("5 seconds")
    }
    return { result: yield* Fiber.join(fiber), seen }
  })

/**
 * Until `done` holds, yielding to the event loop between looks (a latch on what the test can
 * read: no sleep, no virtual time); dies with `what` when it never does.
 */
const eventually = <E, R>(what: string, done: Effect.Effect<boolean, E, R>) =>
  Effect.gen(function*() {
    for (let turn = 0; turn < 100_000; turn++) {
      if (yield* done) return
      yield* Effect.yieldNow()
    }
    return yield* Effect.dieMessage(what)
  })

describe("AppexecClient against a served instance", () => {
  it.scoped("discovers, inspects, runs an app to completion and reads its text output", () =>
    Effect.gen(function*() {
      const served = yield* serve()
      const client = yield* clientOf(served)

      const apps = yield* client.apps.list({ search: "greet" })
      expect(apps.map((a) => a.name)).toEqual(["Greeting"])
      const detail = yield* client.apps.get(served.greetingAppId)
      expect(detail.parameters.map((p) => p.name)).toEqual(["who", "tone"])
      const graph = yield* client.apps.workflow(served.greetingAppId)
      expect(graph.nodes.map((n) => n.id)).toContain("pause")

      const { result: outcome, seen } = yield* driveToEnd((onStatus) =>
        client.run(served.greetingAppId, { who: "Ada" }, { onStatus, hold: false, live: false })
      )
      const result = Either.getOrThrow(outcome)
      expect(result.status).toBe("completed")
      expect(seen.length).toBeGreaterThanOrEqual(3)
      expect(seen.at(-1)).toBe("completed")
      expect(Outputs.text(result, "Greeting")).toBe("Hello Ada, in a warm tone.")
      expect(Outputs.text(result, "greeting")).toBe("Hello Ada, in a warm tone.")
      expect(Outputs.mediaUrl(result, "Greeting")).toBeUndefined()
    }).pipe(Effect.provide(instance)))

  it.scoped("starts and runs at a priority; one above the workspace's highest, or out of range, is invalid_request", () =>
    Effect.gen(function*() {
      const served = yield* serve()
      const client = yield* clientOf(served)
      const store = yield* ExecutionStore.ExecutionStore
      const started = yield* client.executions.start(served.greetingAppId, { who: "Ada" }, { priority: 7 })
      expect(Option.getOrThrow(yield* store.get(started.executionId)).priority).toBe(7)

      yield* (yield* Appexec.Appexec).workspaces.set("consumers", { maxPriority: 6 })
      const refused = yield* Effect.flip(client.executions.start(served.greetingAppId, { who: "Ada" }, { priority: 7 }))
      expect(refused).toMatchObject({ _tag: "ApiError", status: 400, code: "invalid_request" })
      expect(refused.message).toBe("`priority` 7 is above 6, the highest this workspace may start at.")
      // Out of range: refused before sending, in the server's words (no server answered: status 0).
      for (const priority of [11, -11, 1.5]) {
        const local = yield* Effect.flip(client.executions.start(served.greetingAppId, { who: "Ada" }, { priority }))
        expect(local).toMatchObject({ _tag: "ApiError", status: 0, code: "invalid_request" })
        expect(local.message).toBe("`priority` must be an integer from -10 to 10 (default 0).")
      }
      const { result } = yield* driveToEnd((onStatus) =>
        client.run(served.greetingAppId, { who: "Ada" }, { onStatus, hold: false, live: false, priority: 6 })
      )
      const done = Either.getOrThrow(result)
      expect(done.status).toBe("completed")
      expect(Option.getOrThrow(yield* store.get(done.executionId)).priority).toBe(6)
    }).pipe(Effect.provide(instance)))

  it.scoped("waits with reads only: the start is sent exactly once", () =>
    Effect.gen(function*() {
      const served = yield* serve()
      const { calls, fetch } = countingFetch()
      const client = yield* clientOf(served, { fetch })
      const started = yield* client.executions.start(served.greetingAppId, { who: "Bo" })
      expect(started.status).toBe("queued")
      expect(started.outputs.every((o) => o.value === null && o.status === "pending")).toBe(true)

      const { result, seen } = yield* driveToEnd((onStatus) =>
        client.executions.wait(started.executionId, { onStatus, hold: false, live: false })
      )
      expect(result._tag).toBe("Right")
      expect(seen.at(-1)).toBe("completed")
      expect(calls.filter((c) => c.startsWith("POST"))).toEqual([`POST /v1/apps/${served.greetingAppId}/executions`])
      expect(calls.filter((c) => c === `GET /v1/executions/${started.executionId}`).length).toBe(seen.length)
    }).pipe(Effect.provide(instance)))

  it.scoped("stops waiting at the timeout with the last status seen; the execution goes on", () =>
    Effect.gen(function*() {
      const served = yield* serve()
      const client = yield* clientOf(served)
      const started = yield* client.executions.start(served.greetingAppId, { who: "Cy" })
      const { result } = yield* driveToEnd((onStatus) =>
        client.executions.wait(started.executionId, { onStatus, timeout: 6_000, hold: false, live: false })
      )
      expect(result._tag).toBe("Left")
      if (result._tag === "Left") {
        expect(result.left).toMatchObject({ _tag: "WaitError", reason: "timeout", executionId: started.executionId })
        expect(result.left._tag === "WaitError" && result.left.lastStatus).toMatch(/queued|running/)
      }
      yield* TestClock.adjust("10 seconds")
      expect((yield* client.executions.get(started.executionId)).status).toBe("completed")
    }).pipe(Effect.provide(instance)))

  it.scoped("reads how the webhook delivery of an execution goes", () =>
    Effect.gen(function*() {
      const served = yield* serve()
      const client = yield* clientOf(served)
      const plain = yield* client.executions.start(served.greetingAppId, { who: "Ed" })
      expect(yield* client.executions.webhook(plain.executionId)).toBeNull()
      const hooked = yield* client.executions.start(served.greetingAppId, { who: "Flo" }, {
        webhook: "https://example.com/hook"
      })
      expect(yield* client.executions.webhook(hooked.executionId)).toEqual({
        url: "https://example.com/hook",
        status: "pending",
        attempts: [],
        events: ["completed"],
        deliveries: []
      })
      const missing = yield* Effect.flip(client.executions.webhook(crypto.randomUUID()))
      expect(missing).toMatchObject({ _tag: "ApiError", status: 404 })
      yield* TestClock.adjust("10 seconds")
    }).pipe(Effect.provide(instance)))

  it.scoped("stops waiting when the signal aborts", () =>
    Effect.gen(function*() {
      const served = yield* serve()
      const client = yield* clientOf(served)
      const started = yield* client.executions.start(served.greetingAppId, { who: "Di" })
      const controller = new AbortController()
      const statuses = yield* Queue.unbounded<Execution.Execution>()
      const fiber = yield* Effect.fork(
        client.executions.wait(started.executionId, {
          signal: controller.signal,
          hold: false,
          onStatus: (e) => Queue.offer(statuses, e)
        })
      )
      yield* Queue.take(statuses)
      controller.abort()
      const error = yield* Effect.flip(Fiber.join(fiber))
      expect(error).toMatchObject({ _tag: "WaitError", reason: "aborted" })
      expect(error.message).toContain("aborted")
      // The execution itself goes on (and must end before the instance shuts down).
      yield* TestClock.adjust("10 seconds")
      expect((yield* client.executions.get(started.executionId)).status).toBe("completed")
    }).pipe(Effect.provide(instance)))

  it.scoped("returns a failed execution with its error, reading the failed output without assuming an image", () =>
    Effect.gen(function*() {
      const served = yield* serve()
      const client = yield* clientOf(served)
      const { result: outcome } = yield* driveToEnd((onStatus) =>
        client.run(served.parseAppId, { text: "not json" }, { onStatus, hold: false })
      )
      const result = Either.getOrThrow(outcome)
      expect(result.status).toBe("failed")
      const parsed = Outputs.read(result, "Parsed")
      expect(parsed?.kind).toBe("failed")
      if (parsed?.kind === "failed") expect(parsed.error).toContain("not valid JSON")
      expect(Outputs.mediaUrl(result, "Parsed")).toBeUndefined()
    }).pipe(Effect.provide(instance)))

  it.scoped("long polling: each read is held until the execution changes, and the wait ends when it ends", () =>
    Effect.gen(function*() {
      const served = yield* serve()
      const { calls, fetch } = countingFetch()
      const client = yield* clientOf(served, { fetch })
      const started = yield* client.executions.start(served.greetingAppId, { who: "Ed" })
      const fiber = yield* Effect.fork(client.executions.wait(started.executionId, { live: false }))
      // The app pauses 10 s; each read asks to be held up to 20 s, so the last answers at completion.
      yield* TestClock.adjust("10 seconds")
      const done = yield* Fiber.join(fiber)
      expect(done.status).toBe("completed")
      // A read at once, one held until it runs (unless the first saw it running), one held until it ends.
      const reads = calls.filter((c) => c === `GET /v1/executions/${started.executionId}`)
      expect(reads.length).toBeGreaterThanOrEqual(2)
      expect(reads.length).toBeLessThanOrEqual(3)
    }).pipe(Effect.provide(instance)))

  it.scoped("long polling: the wait reports running as soon as the execution runs, before it ends", () =>
    Effect.gen(function*() {
      const served = yield* serve()
      const client = yield* clientOf(served)
      const seen = yield* Ref.make<ReadonlyArray<Execution.ExecutionStatus>>([])
      const fiber = yield* Effect.fork(
        client.run(served.greetingAppId, { who: "Ada" }, {
          live: false,
          onStatus: (execution) => Ref.update(seen, (statuses) => [...statuses, execution.status])
        })
      )
      // No virtual time passes: the worker starts it at once, and a held read answers that change.
      yield* eventually("the wait never reported running", Effect.map(Ref.get(seen), (s) => s.includes("running")))
      expect(yield* Fiber.poll(fiber)).toEqual(Option.none())
      yield* TestClock.adjust("10 seconds")
      expect((yield* Fiber.join(fiber)).status).toBe("completed")
      expect((yield* Ref.get(seen)).at(-1)).toBe("completed")
    }).pipe(Effect.provide(instance)))

  it.scoped("cancels a running execution: it ends failed with the cancel message", () =>
    Effect.gen(function*() {
      const served = yield* serve()
      const client = yield* clientOf(served)
      const started = yield* client.executions.start(served.greetingAppId, { who: "Flo" })
      yield* TestClock.adjust("1 second")
      expect((yield* client.executions.get(started.executionId)).status).toBe("running")
      yield* client.executions.cancel(started.executionId)
      const done = yield* client.executions.wait(started.executionId, { hold: 5 })
      expect(done.status).toBe("failed")
      expect(done.errorMessage).toBe("The execution was canceled.")
      const again = yield* Effect.flip(client.executions.cancel(started.executionId))
      expect(again).toMatchObject({ _tag: "ApiError", status: 409, code: "execution_finished" })
    }).pipe(Effect.provide(instance)))
})
