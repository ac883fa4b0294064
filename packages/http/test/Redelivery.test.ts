/**
 * Webhook redelivery over a real socket, to a real receiver (docs/api.md#redeliver-a-webhook):
 * one more attempt of a finished execution's webhook, signed when it is sent (checked with
 * node:crypto against the published key), no retry after it, 409 while it cannot be sent and 404
 * for another workspace; and `appId` and `inputs` in every answer about an execution: the poll,
 * the cancel, the webhook body and the event stream.
 */
import { Api, type Jwk } from "@appexec/api"
import { Appexec } from "@appexec/core"
import { TestHarness, TestReceiver } from "@appexec/testing"
import { HttpClientRequest } from "@effect/platform"
import { describe, expect, it } from "@effect/vitest"
import { Clock, Effect, Layer, Option, Schema, TestClock } from "effect"
import { clientLayer, errorOf, get, seed, send, serverLayer, slowApp, TestServer } from "./fixtures.js"
import { eventsUntilEnd, open } from "./sse.js"

/** The instance with its webhook dispatcher and its own signing keys, behind the server. */
const withWebhooks = clientLayer.pipe(
  Layer.provideMerge(serverLayer()),
  Layer.provideMerge(TestHarness.layer({ webhooks: true }))
)

type Delivery = {
  readonly url: string
  readonly status: string
  readonly attempts: ReadonlyArray<{ readonly statusCode: number | null; readonly error: string | null }>
}

const start = (appId: string, key: string, inputs: Record<string, string>, webhook?: string) =>
  Effect.map(
    send(
      HttpClientRequest.post(
        `/v1/apps/${appId}/executions${webhook === undefined ? "" : `?webhook=${encodeURIComponent(webhook)}`}`
      ).pipe(
        HttpClientRequest.setHeader("x-api-key", key),
        HttpClientRequest.bodyText(JSON.stringify({ inputs }), "application/json")
      )
    ),
    (answer) => {
      expect(answer.status).toBe(202)
      return (answer.body as { readonly data: { readonly executionId: string } }).data.executionId
    }
  )

const post = (path: string, key: string) =>
  send(HttpClientRequest.post(path).pipe(HttpClientRequest.setHeader("x-api-key", key)))

const redeliver = (executionId: string, key: string) => post(`/v1/executions/${executionId}/webhook/redeliver`, key)

const deliveryOf = (executionId: string, key: string) =>
  Effect.map(get(`/v1/executions/${executionId}/webhook`, key), (answer) => (answer.body as { data: Delivery }).data)

/** The poll answer's `data`, as JSON. */
const polled = (executionId: string, key: string) =>
  Effect.map(get(`/v1/executions/${executionId}`, key), (answer) => (answer.body as { data: unknown }).data)

/** Until `done` holds, yielding to the event loop between looks (no sleep); dies with `what` when it never does. */
const eventually = <E, R>(what: string, done: Effect.Effect<boolean, E, R>) =>
  Effect.gen(function*() {
    for (let turn = 0; turn < 100_000; turn++) {
      if (yield* done) return
      yield* Effect.yieldNow()
    }
    return yield* Effect.dieMessage(what)
  })

const bodyOf = (request: TestReceiver.Received) => JSON.parse(new TextDecoder().decode(request.rawBody))

describe("POST /v1/executions/{executionId}/webhook/redeliver", () => {
  it.scoped("sends a finished execution's webhook once more, signed when sent, with no retry after it", () =>
    Effect.gen(function*() {
      // The first delivery and the third request are answered; the first redelivery is held.
      const receiver = yield* TestReceiver.start((request) => (request.number === 2 ? "hold" : 204))
      const { alice, echo } = yield* seed
      const appexec = yield* Appexec.Appexec
      const keySet = (yield* get("/v1/webhooks/signing-key", alice.key)).body as Jwk.JwkSet
      const id = yield* start(echo.appId, alice.key, { prompt: "hi" }, receiver.url())
      yield* appexec.executions.await(id)

      const first = yield* receiver.next
      expect(TestReceiver.verifiedByNodeCrypto(keySet.keys, first)).toBe(true)
      yield* eventually(
        "the first delivery was not recorded",
        Effect.map(deliveryOf(id, alice.key), (d) => d.status === "delivered")
      )

      yield* TestClock.adjust("10 seconds")
      const redelivered = yield* redeliver(id, alice.key)
      expect(redelivered.status).toBe(202)
      expect(redelivered.headers["ratelimit-limit"]).toBeDefined()
      Schema.decodeUnknownSync(Api.redeliverExecutionWebhook.successSchema)(redelivered.body)
      const attempts = [{ at: "1970-01-01T00:00:00.000Z", statusCode: 204, error: null }]
      expect((redelivered.body as { data: Delivery }).data).toEqual({
        url: receiver.url(),
        status: "pending",
        attempts,
        // The execution's events, and its one delivery, by the id it was sent with.
        events: ["completed"],
        deliveries: [{
          id: first.headers["webhook-id"],
          type: "completed",
          status: "pending",
          createdAt: "1970-01-01T00:00:00.000Z",
          attempts
        }]
      })

      // The attempt is under way (the receiver holds it): a second redelivery is refused meanwhile.
      const second = yield* receiver.next
      const busy = yield* redeliver(id, alice.key)
      expect(busy.status).toBe(409)
      expect(errorOf(busy.body)).toMatchObject({ code: "webhook_not_redeliverable" })
      expect(errorOf(busy.body).message).toContain("being delivered")

      // Signed when sent, with its own timestamp; the same body as the first, the execution as polled.
      expect(second.headers["x-service-webhook-timestamp"]).toBe("10")
      expect(first.headers["x-service-webhook-timestamp"]).toBe("0")
      expect(TestReceiver.verifiedByNodeCrypto(keySet.keys, second)).toBe(true)
      expect(second.headers["x-service-webhook-request-id"]).toBe(id)
      expect(bodyOf(second)).toEqual(bodyOf(first))
      expect(bodyOf(second)).toEqual({ data: yield* polled(id, alice.key) })

      // The held attempt times out: it fails, and no retry follows it (as a second attempt, it would
      // have been retried 30 s later).
      yield* TestClock.adjust("11 seconds")
      yield* eventually(
        "the redelivery was not recorded",
        Effect.map(deliveryOf(id, alice.key), (d) => d.status === "failed")
      )
      yield* TestClock.adjust("35 seconds")
      const failed = yield* deliveryOf(id, alice.key)
      expect(failed.attempts.map((a) => a.statusCode)).toEqual([204, null])
      expect(failed.attempts[1]!.error).toContain("timeout")
      expect(receiver.received).toHaveLength(2)

      // A failed delivery can be redelivered too; this one is answered.
      const again = yield* redeliver(id, alice.key)
      expect(again.status).toBe(202)
      const third = yield* receiver.next
      expect(third.headers["x-service-webhook-timestamp"]).toBe(
        String(Math.floor((yield* Clock.currentTimeMillis) / 1000))
      )
      expect(TestReceiver.verifiedByNodeCrypto(keySet.keys, third)).toBe(true)
      yield* eventually(
        "the second redelivery was not recorded",
        Effect.map(deliveryOf(id, alice.key), (d) => d.status === "delivered")
      )
      expect((yield* deliveryOf(id, alice.key)).attempts.map((a) => a.statusCode)).toEqual([204, null, 204])
    }).pipe(Effect.provide(withWebhooks)))

  it.scoped("409 without a webhook or before the end, 404 for another workspace or an unknown id", () =>
    Effect.gen(function*() {
      const receiver = yield* TestReceiver.start()
      const { alice, bob, echo } = yield* seed
      const appexec = yield* Appexec.Appexec
      const slow = yield* appexec.apps.import(slowApp, { owner: { public: true } })

      const plain = yield* start(echo.appId, alice.key, { prompt: "no hook" })
      yield* appexec.executions.await(plain)
      const none = yield* redeliver(plain, alice.key)
      expect(none.status).toBe(409)
      expect(errorOf(none.body)).toMatchObject({ code: "webhook_not_redeliverable" })
      expect(errorOf(none.body).message).toContain("without a webhook")

      const running = yield* start(slow.appId, alice.key, { prompt: "wait" }, receiver.url())
      yield* TestClock.adjust("1 second")
      const early = yield* redeliver(running, alice.key)
      expect(early.status).toBe(409)
      expect(errorOf(early.body).message).toContain("has not finished")

      const hooked = yield* start(echo.appId, alice.key, { prompt: "hook" }, receiver.url())
      yield* appexec.executions.await(hooked)
      yield* receiver.next
      for (
        const [executionId, key] of [[hooked, bob.key], ["00000000-0000-4000-8000-000000000000", alice.key], [
          "x",
          alice.key
        ]]
      ) {
        const missing = yield* redeliver(executionId!, key!)
        expect(missing.status).toBe(404)
        expect(errorOf(missing.body).code).toBe("not_found")
      }
      expect((yield* post(`/v1/executions/${hooked}/webhook/redeliver`, "aex_not_a_key")).status).toBe(401)
    }).pipe(Effect.provide(withWebhooks)))
})

describe("appId and inputs in every execution answer", () => {
  it.scoped("the poll, the cancel, the webhook body and the event stream carry them, inputs as accepted", () =>
    Effect.gen(function*() {
      const receiver = yield* TestReceiver.start()
      const { alice, echo } = yield* seed
      const appexec = yield* Appexec.Appexec
      const slow = yield* appexec.apps.import(slowApp, { owner: { public: true } })
      const inputs = { prompt: "say \"hi\"\n ü" }
      const id = yield* start(echo.appId, alice.key, inputs, receiver.url())
      yield* appexec.executions.await(id)

      const data = (yield* polled(id, alice.key)) as Record<string, unknown>
      expect(data).toMatchObject({ appId: echo.appId, inputs: { ...inputs, style: "plain" } })
      expect(bodyOf(yield* receiver.next)).toEqual({ data })

      const { url } = yield* TestServer
      const stream = yield* open(url, `/v1/executions/${id}/events`, { "x-api-key": alice.key })
      const events = yield* eventsUntilEnd(stream)
      const last = events.filter((event) => event.event === "execution").at(-1)
      expect(Option.fromNullable(last).pipe(Option.map((event) => JSON.parse(event.data)))).toEqual(Option.some(data))

      const canceling = yield* start(slow.appId, alice.key, { prompt: "stop" })
      const canceled = yield* post(`/v1/executions/${canceling}/cancel`, alice.key)
      expect(canceled.status).toBe(202)
      expect((canceled.body as { data: unknown }).data).toMatchObject({ appId: slow.appId, inputs: { prompt: "stop" } })
    }).pipe(Effect.provide(withWebhooks)))
})
