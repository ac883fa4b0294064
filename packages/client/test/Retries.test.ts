import { describe, expect, it } from "@effect/vitest"
import { Deferred, Effect, Exit, Fiber, Layer, Queue, Ref, TestClock } from "effect"
import { AppexecClient, type ClientConfig } from "../src/index.js"
import { instance, instanceWithFaults, serve, type Served } from "./ServedInstance.js"

/** A `fetch` in front of the real one: counts requests by `METHOD path`, and can fail some before sending. */
const frontFetch = (refuse: (method: string, path: string) => "refused" | "reset" | undefined = () => undefined) => {
  const calls: Array<string> = []
  const statuses: Array<number> = []
  const fetch: typeof globalThis.fetch = async (input, init) => {
    const method = init?.method ?? "GET"
    const path = new URL(input instanceof Request ? input.url : input.toString()).pathname
    calls.push(`${method} ${path}`)
    const failure = refuse(method, path)
    if (failure === "refused") {
      throw new TypeError("fetch failed", {
        cause: Object.assign(new Error("connect ECONNREFUSED"), { code: "ECONNREFUSED" })
      })
    }
    if (failure === "reset") {
      // The request went out; the connection broke before the answer.
      const response = await globalThis.fetch(input, init)
      await response.arrayBuffer()
      throw new TypeError("fetch failed", { cause: Object.assign(new Error("socket hang up"), { code: "ECONNRESET" }) })
    }
    const response = await globalThis.fetch(input, init)
    statuses.push(response.status)
    return response
  }
  return { calls, statuses, fetch }
}

const withRetryEvents = (served: Served, config: Partial<ClientConfig.ClientConfig>) =>
  Effect.gen(function*() {
    const retries = yield* Queue.unbounded<ClientConfig.RetryEvent>()
    const client = yield* AppexecClient.make({
      baseUrl: served.baseUrl,
      apiKey: served.apiKey,
      onRetry: (event) => Queue.unsafeOffer(retries, event),
      ...config
    })
    return { client, retries }
  })

describe("retries (docs/api.md#errors) against a served instance", () => {
  it.scoped("waits for Retry-After on a 429, then sends the request again, a start included", () =>
    Effect.gen(function*() {
      const served = yield* serve({ rateLimit: { limit: 2, windowMs: 60_000 } })
      const front = frontFetch()
      const { client, retries } = yield* withRetryEvents(served, { fetch: front.fetch })
      yield* client.apps.list()
      yield* client.apps.get(served.greetingAppId)

      const fiber = yield* Effect.fork(client.executions.start(served.greetingAppId, { who: "Eve" }))
      const event = yield* Queue.take(retries)
      expect(event).toMatchObject({ method: "POST", reason: "rate_limited", retry: 1 })
      // 3 requests in this minute (the refused one counts too): the next minute starts with the
      // previous one weighing at most limit − 1, so there is room at once, and Retry-After never
      // exceeds the one-minute window.
      expect(event.delayMs).toBe(60_000)
      expect(front.statuses).toEqual([200, 200, 429])
      yield* TestClock.adjust(event.delayMs)
      const started = yield* Fiber.join(fiber)
      expect(started.status).toBe("queued")
      expect(front.statuses).toEqual([200, 200, 429, 202])
      yield* TestClock.adjust("10 seconds")
    }).pipe(Effect.provide(instance)))

  it.scoped("gives up on a 429 whose wait is longer than allowed, with a readable error", () =>
    Effect.gen(function*() {
      const served = yield* serve({ rateLimit: { limit: 1, windowMs: 60_000 } })
      const { client, retries } = yield* withRetryEvents(served, { retry: { maxRateLimitWaitMs: 30_000 } })
      yield* client.apps.list()
      const error = yield* Effect.flip(client.apps.list())
      expect(error).toMatchObject({ _tag: "ApiError", status: 429, code: "rate_limited" })
      expect(String(error)).toMatch(/^429 rate_limited: /)
      expect(yield* Queue.size(retries)).toBe(0)
    }).pipe(Effect.provide(instance)))

  it.scoped("retries a read answered 500 by the server, with backoff", () =>
    Effect.gen(function*() {
      const faults = yield* Ref.make(0)
      return yield* Effect.gen(function*() {
        const served = yield* serve()
        const front = frontFetch()
        const { client, retries } = yield* withRetryEvents(served, { fetch: front.fetch })
        const started = yield* client.executions.start(served.parseAppId, { text: "[1, 2]" })
        yield* Ref.set(faults, 1)
        const fiber = yield* Effect.fork(client.executions.get(started.executionId))
        const event = yield* Queue.take(retries)
        expect(event).toMatchObject({ method: "GET", reason: "server_error", retry: 1 })
        expect(event.delayMs).toBeGreaterThanOrEqual(250)
        expect(event.delayMs).toBeLessThanOrEqual(500)
        yield* TestClock.adjust(event.delayMs)
        const execution = yield* Fiber.join(fiber)
        expect(execution.executionId).toBe(started.executionId)
        expect(front.statuses).toEqual([202, 500, 200])
      }).pipe(Effect.provide(Layer.fresh(instanceWithFaults(faults))))
    }))

  it.scoped("fails with the 500 once the retries are used up", () =>
    Effect.gen(function*() {
      const faults = yield* Ref.make(0)
      return yield* Effect.gen(function*() {
        const served = yield* serve()
        const { client } = yield* withRetryEvents(served, { retry: { maxRetries: 0 } })
        const started = yield* client.executions.start(served.parseAppId, { text: "{}" })
        yield* Ref.set(faults, 1)
        const error = yield* Effect.flip(client.executions.get(started.executionId))
        expect(error).toMatchObject({ _tag: "ApiError", status: 500, code: "internal_error" })
      }).pipe(Effect.provide(Layer.fresh(instanceWithFaults(faults))))
    }))

  it.scoped("never retries 400, 401, 403 or 404", () =>
    Effect.gen(function*() {
      const served = yield* serve()
      const front = frontFetch()
      const { client, retries } = yield* withRetryEvents(served, { fetch: front.fetch })

      const notFound = yield* Effect.flip(client.executions.get("00000000-0000-4000-8000-000000000000"))
      expect(notFound).toMatchObject({ _tag: "ApiError", status: 404, code: "not_found" })
      const invalid = yield* Effect.flip(client.executions.start(served.greetingAppId, { nobody: "x" }))
      expect(invalid).toMatchObject({ _tag: "ApiError", status: 400, code: "invalid_inputs" })
      const badWebhook = yield* Effect.flip(
        client.executions.start(served.greetingAppId, { who: "x" }, { webhook: "ftp://x" })
      )
      expect(badWebhook).toMatchObject({ _tag: "ApiError", status: 400, code: "invalid_webhook_url" })

      const stranger = yield* AppexecClient.make({
        baseUrl: served.baseUrl,
        apiKey: "aex_not-a-key",
        fetch: front.fetch
      })
      const unauthorized = yield* Effect.flip(stranger.apps.list())
      expect(unauthorized).toMatchObject({ _tag: "ApiError", status: 401, code: "unauthorized" })

      expect(front.statuses).toEqual([404, 400, 400, 401])
      expect(yield* Queue.size(retries)).toBe(0)
    }).pipe(Effect.provide(instance)))

  it.scoped("re-sends a start only when it provably never reached the server", () =>
    Effect.gen(function*() {
      const served = yield* serve()
      let refusals = 1
      const front = frontFetch((method) => (method === "POST" && refusals-- > 0 ? "refused" : undefined))
      const { client, retries } = yield* withRetryEvents(served, { fetch: front.fetch })
      const fiber = yield* Effect.fork(client.executions.start(served.parseAppId, { text: "{}" }))
      const event = yield* Queue.take(retries)
      expect(event).toMatchObject({ method: "POST", reason: "network", retry: 1 })
      yield* TestClock.adjust(event.delayMs)
      const started = yield* Fiber.join(fiber)
      expect(started.status).toBe("queued")
      expect(front.statuses).toEqual([202])
    }).pipe(Effect.provide(instance)))

  it.scoped("does not re-send a start whose connection broke after sending, but retries such a read", () =>
    Effect.gen(function*() {
      const served = yield* serve()
      let resets = 2
      const front = frontFetch(() => (resets-- > 0 ? "reset" : undefined))
      const { client, retries } = yield* withRetryEvents(served, { fetch: front.fetch })
      const error = yield* Effect.flip(client.executions.start(served.parseAppId, { text: "{}" }))
      expect(error).toMatchObject({ _tag: "NetworkError", reason: "network", sent: true })
      expect(yield* Queue.size(retries)).toBe(0)

      const fiber = yield* Effect.fork(client.apps.list())
      const event = yield* Queue.take(retries)
      expect(event).toMatchObject({ method: "GET", reason: "network" })
      yield* TestClock.adjust(event.delayMs)
      expect((yield* Fiber.join(fiber)).length).toBe(2)
      expect(front.calls.filter((c) => c.startsWith("POST"))).toHaveLength(1)
    }).pipe(Effect.provide(instance)))

  it.scoped("times out a read that gets no answer and retries it", () =>
    Effect.gen(function*() {
      const served = yield* serve()
      let hangs = 1
      const hung = yield* Deferred.make<void>()
      const hanging: typeof globalThis.fetch = (input, init) => {
        if (hangs-- <= 0) return globalThis.fetch(input, init)
        Deferred.unsafeDone(hung, Exit.void)
        return new Promise((_, reject) =>
          init?.signal?.addEventListener("abort", () => reject(new DOMException("aborted", "AbortError")))
        )
      }
      const { client, retries } = yield* withRetryEvents(served, { fetch: hanging, timeoutMs: 2_000 })
      const fiber = yield* Effect.fork(client.apps.list())
      yield* Deferred.await(hung)
      yield* TestClock.adjust("2 seconds")
      const event = yield* Queue.take(retries)
      expect(event).toMatchObject({ method: "GET", reason: "network", retry: 1 })
      yield* TestClock.adjust(event.delayMs)
      expect((yield* Fiber.join(fiber)).length).toBe(2)
    }).pipe(Effect.provide(instance)))
})
