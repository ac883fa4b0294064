/**
 * The additive extensions over a real socket (docs/api.md#extensions): idempotent starts, cancel,
 * long polling with `Prefer: wait=N`, and conditional polling with `ETag` and `If-None-Match`.
 */
import { Appexec, WebhookOutbox } from "@appexec/core"
import { HttpClientRequest } from "@effect/platform"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Fiber, TestClock } from "effect"
import { errorOf, seed, send, slowApp, stack } from "./fixtures.js"

const start = (appId: string, key: string, inputs: Record<string, string>, headers: Record<string, string> = {}) =>
  send(
    HttpClientRequest.post(`/v1/apps/${appId}/executions?webhook=${encodeURIComponent("https://hooks.example/x")}`)
      .pipe(
        HttpClientRequest.setHeaders({ "x-api-key": key, ...headers }),
        HttpClientRequest.bodyText(JSON.stringify({ inputs }), "application/json")
      )
  )

const cancel = (executionId: string, key: string) =>
  send(
    HttpClientRequest.post(`/v1/executions/${executionId}/cancel`).pipe(HttpClientRequest.setHeader("x-api-key", key))
  )

const poll = (executionId: string, key: string, headers: Record<string, string> = {}) =>
  send(
    HttpClientRequest.get(`/v1/executions/${executionId}`).pipe(
      HttpClientRequest.setHeaders({ "x-api-key": key, ...headers })
    )
  )

type Data = { readonly data: { readonly executionId: string; readonly status: string; readonly errorMessage?: string } }
const dataOf = (body: unknown) => (body as Data).data

const seedSlow = Effect.gen(function*() {
  const seeded = yield* seed
  const appexec = yield* Appexec.Appexec
  const slow = yield* appexec.apps.import(slowApp, { owner: { public: true } })
  return { ...seeded, slow }
})

describe("Idempotency-Key", () => {
  it.scoped("a repeat answers the first execution with the same body; another request with the key is 409", () =>
    Effect.gen(function*() {
      const { alice, bob, echo } = yield* seed
      const first = yield* start(echo.appId, alice.key, { prompt: "hi" }, { "idempotency-key": "order-1" })
      expect(first.status).toBe(202)
      const appexec = yield* Appexec.Appexec
      yield* appexec.executions.await(dataOf(first.body).executionId)
      const again = yield* start(echo.appId, alice.key, { prompt: "hi" }, { "idempotency-key": "order-1" })
      expect(again.status).toBe(202)
      expect(again.body).toEqual(first.body)
      const other = yield* start(echo.appId, alice.key, { prompt: "bye" }, { "idempotency-key": "order-1" })
      expect(other.status).toBe(409)
      expect(errorOf(other.body).code).toBe("idempotency_key_reused")
      expect(errorOf(other.body).message).toContain(dataOf(first.body).executionId)
      // Keys are per workspace.
      const bobs = yield* start(echo.appId, bob.key, { prompt: "hi" }, { "idempotency-key": "order-1" })
      expect(bobs.status).toBe(202)
      expect(dataOf(bobs.body).executionId).not.toBe(dataOf(first.body).executionId)
    }).pipe(Effect.provide(stack())))

  it.scoped("concurrent starts with one key make exactly one execution", () =>
    Effect.gen(function*() {
      const { alice, echo } = yield* seed
      const answers = yield* Effect.all(
        Array.from({ length: 12 }, () => start(echo.appId, alice.key, { prompt: "x" }, { "idempotency-key": "k" })),
        { concurrency: "unbounded" }
      )
      expect(answers.map((a) => a.status)).toEqual(Array(12).fill(202))
      expect(new Set(answers.map((a) => dataOf(a.body).executionId)).size).toBe(1)
    }).pipe(Effect.provide(stack())))

  it.scoped("a key that is not 1 to 255 visible ASCII characters is 400 invalid_request", () =>
    Effect.gen(function*() {
      const { alice, echo } = yield* seed
      for (const key of ["with space", "x".repeat(256), "tab\tkey"]) {
        const refused = yield* start(echo.appId, alice.key, { prompt: "x" }, { "idempotency-key": key })
        expect(refused.status).toBe(400)
        expect(errorOf(refused.body)).toMatchObject({ code: "invalid_request" })
        expect(errorOf(refused.body).message).toContain("Idempotency-Key")
      }
    }).pipe(Effect.provide(stack())))
})

describe("cancel", () => {
  it.scoped("a running execution is interrupted at once and fails with the cancel message and its webhook", () =>
    Effect.gen(function*() {
      const { alice, bob, slow } = yield* seedSlow
      const started = yield* start(slow.appId, alice.key, { prompt: "p" })
      const id = dataOf(started.body).executionId
      yield* TestClock.adjust("1 second")
      expect(dataOf((yield* poll(id, alice.key)).body).status).toBe("running")
      // Another workspace cannot see it, so cannot cancel it.
      const foreign = yield* cancel(id, bob.key)
      expect(foreign.status).toBe(404)
      const canceled = yield* cancel(id, alice.key)
      expect(canceled.status).toBe(202)
      expect(dataOf(canceled.body).executionId).toBe(id)
      const appexec = yield* Appexec.Appexec
      // Interrupted where it runs: no virtual time passes, the 60 s pause is abandoned.
      const done = yield* appexec.executions.await(id)
      expect(done.status).toBe("failed")
      expect(done.errorMessage).toBe("The execution was canceled.")
      expect(done.outputs[0]).toMatchObject({ status: "failed", error: "The execution was canceled." })
      const outbox = yield* WebhookOutbox.WebhookOutbox
      expect((yield* outbox.forExecution(done.executionId)).map((e) => e.url)).toEqual(["https://hooks.example/x"])
      const finished = yield* cancel(id, alice.key)
      expect(finished.status).toBe(409)
      expect(errorOf(finished.body).code).toBe("execution_finished")
      const unknown = yield* cancel("00000000-0000-4000-8000-000000000000", alice.key)
      expect(unknown.status).toBe(404)
    }).pipe(Effect.provide(stack())))
})

describe("long polling and conditional polling", () => {
  it.scoped("Prefer: wait=N holds the answer until the execution finishes, with Preference-Applied", () =>
    Effect.gen(function*() {
      const { alice, slow } = yield* seedSlow
      const id = dataOf((yield* start(slow.appId, alice.key, { prompt: "p" })).body).executionId
      // The hold starts after the run did, so the run ends (at 60 s) before the hold would.
      yield* TestClock.adjust("1 second")
      const held = yield* Effect.fork(poll(id, alice.key, { prefer: "wait=60" }))
      yield* TestClock.adjust("29 seconds")
      expect(yield* Fiber.poll(held)).toMatchObject({ _tag: "None" })
      yield* TestClock.adjust("30 seconds")
      const answer = yield* Fiber.join(held)
      expect(answer.status).toBe(200)
      expect(answer.headers["preference-applied"]).toBe("wait=60")
      expect(dataOf(answer.body).status).toBe("completed")
    }).pipe(Effect.provide(stack())))

  it.scoped("a held request answers as usual after N seconds when the execution is still running", () =>
    Effect.gen(function*() {
      const { alice, slow } = yield* seedSlow
      const id = dataOf((yield* start(slow.appId, alice.key, { prompt: "p" })).body).executionId
      const held = yield* Effect.fork(poll(id, alice.key, { prefer: "respond-async, wait=5" }))
      yield* TestClock.adjust("5 seconds")
      const answer = yield* Fiber.join(held)
      expect(answer.status).toBe(200)
      expect(answer.headers["preference-applied"]).toBe("wait=5")
      expect(dataOf(answer.body).status).toBe("running")
      // Longer than 60 s is held 60 s; a preference that is not a whole number is ignored.
      const capped = yield* Effect.fork(poll(id, alice.key, { prefer: "wait=600" }))
      yield* TestClock.adjust("60 seconds")
      expect((yield* Fiber.join(capped)).headers["preference-applied"]).toBe("wait=60")
      const ignored = yield* poll(id, alice.key, { prefer: "wait=soon" })
      expect(ignored.status).toBe(200)
      expect(ignored.headers["preference-applied"]).toBeUndefined()
    }).pipe(Effect.provide(stack())))

  it.scoped("every execution answer has an ETag; If-None-Match with it is 304 until the execution changes", () =>
    Effect.gen(function*() {
      const { alice, slow } = yield* seedSlow
      const id = dataOf((yield* start(slow.appId, alice.key, { prompt: "p" })).body).executionId
      yield* TestClock.adjust("1 second")
      const first = yield* poll(id, alice.key)
      const etag = first.headers["etag"]
      expect(etag).toMatch(/^"[0-9a-f]+"$/)
      const unchanged = yield* poll(id, alice.key, { "if-none-match": etag! })
      expect(unchanged.status).toBe(304)
      expect(unchanged.body).toBeUndefined()
      expect(unchanged.headers["etag"]).toBe(etag)
      yield* TestClock.adjust("60 seconds")
      const changed = yield* poll(id, alice.key, { "if-none-match": etag! })
      expect(changed.status).toBe(200)
      expect(dataOf(changed.body).status).toBe("completed")
      expect(changed.headers["etag"]).not.toBe(etag)
    }).pipe(Effect.provide(stack())))
})
