/**
 * Webhook events over a real socket (docs/webhooks.md#events): a start names its events in the
 * query (`webhookEvents=start,completed`) or in the body (`"webhookEvents": [...]`), both checked
 * with the API's error shape; a real receiver gets each event, signed in both schemes; the
 * delivery log lists every delivery, and `?delivery=` redelivers one of them; the key set
 * publishes each key as `whpk_…` too.
 */
import type { Jwk } from "@appexec/api"
import { Appexec, WebhookVerifier } from "@appexec/core"
import { TestHarness, TestReceiver } from "@appexec/testing"
import { HttpClientRequest } from "@effect/platform"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Either, Layer } from "effect"
import { clientLayer, errorOf, get, seed, send, serverLayer } from "./fixtures.js"

/** The instance with its webhook dispatcher and its own signing keys, behind the server. */
const withWebhooks = clientLayer.pipe(
  Layer.provideMerge(serverLayer()),
  Layer.provideMerge(TestHarness.layer({ webhooks: true }))
)

const start = (appId: string, key: string, query: string, body: Record<string, unknown>) =>
  send(
    HttpClientRequest.post(`/v1/apps/${appId}/executions${query}`).pipe(
      HttpClientRequest.setHeader("x-api-key", key),
      HttpClientRequest.bodyText(JSON.stringify(body), "application/json")
    )
  )

const post = (path: string, key: string) =>
  send(HttpClientRequest.post(path).pipe(HttpClientRequest.setHeader("x-api-key", key)))

type Delivery = {
  readonly status: string
  readonly events: ReadonlyArray<string>
  readonly deliveries: ReadonlyArray<{ readonly id: string; readonly type: string; readonly status: string }>
}

const bodyOf = (request: TestReceiver.Received) => JSON.parse(new TextDecoder().decode(request.rawBody))

describe("webhook events over HTTP", () => {
  it.scoped("named in the query, each event reaches the receiver, is listed, and is redelivered by its id", () =>
    Effect.gen(function*() {
      const receiver = yield* TestReceiver.start()
      const { alice, echo } = yield* seed
      const appexec = yield* Appexec.Appexec
      const keySet = (yield* get("/v1/webhooks/signing-key", alice.key)).body as Jwk.JwkSet
      for (const key of keySet.keys) {
        expect(key.whpk).toBe(`whpk_${Buffer.from(key.x, "base64url").toString("base64")}`)
      }
      const hook = encodeURIComponent(receiver.url())
      const answer = yield* start(echo.appId, alice.key, `?webhook=${hook}&webhookEvents=start,completed`, {
        inputs: { prompt: "hi" }
      })
      expect(answer.status).toBe(202)
      const id = (answer.body as { data: { executionId: string } }).data.executionId
      yield* appexec.executions.await(id)
      const [begun, ended] = [yield* receiver.next, yield* receiver.next].sort((a, b) =>
        bodyOf(a).type === "start" ? -1 : bodyOf(b).type === "start" ? 1 : 0
      )
      expect(bodyOf(begun!)).toMatchObject({ type: "start", data: { executionId: id, status: "running" } })
      expect(bodyOf(ended!)).toMatchObject({ type: "completed", data: { executionId: id, status: "completed" } })
      for (const request of [begun!, ended!]) {
        expect(TestReceiver.verifiedByNodeCrypto(keySet.keys, request)).toBe(true)
        expect(
          Either.isRight(
            // The instance's clock is the test's: its timestamps are virtual time.
            WebhookVerifier.verifyStandardWebhook(request.rawBody, request.headers, keySet.keys.map((k) => k.whpk!), {
              now: Number(request.headers["webhook-timestamp"]) * 1000
            })
          )
        ).toBe(true)
      }

      let delivery = (yield* get(`/v1/executions/${id}/webhook`, alice.key)).body as { data: Delivery }
      for (let turn = 0; delivery.data.status !== "delivered" && turn < 10_000; turn++) {
        yield* Effect.yieldNow()
        delivery = (yield* get(`/v1/executions/${id}/webhook`, alice.key)).body as { data: Delivery }
      }
      expect(delivery.data.events).toEqual(["start", "completed"])
      expect(delivery.data.deliveries.map((d) => [d.type, d.id]).sort()).toEqual(
        [["completed", ended!.headers["webhook-id"]], ["start", begun!.headers["webhook-id"]]]
      )

      const startId = String(begun!.headers["webhook-id"])
      const redelivered = yield* post(`/v1/executions/${id}/webhook/redeliver?delivery=${startId}`, alice.key)
      expect(redelivered.status).toBe(202)
      const armed = (redelivered.body as { data: Delivery }).data
      expect(armed.deliveries.find((d) => d.id === startId)!.status).toBe("pending")
      const again = yield* receiver.next
      expect(again.headers["webhook-id"]).toBe(startId)
      expect(bodyOf(again)).toEqual(bodyOf(begun!))

      const unknown = yield* post(`/v1/executions/${id}/webhook/redeliver?delivery=nope`, alice.key)
      expect(unknown.status).toBe(409)
      expect(errorOf(unknown.body)).toMatchObject({ code: "webhook_not_redeliverable" })
      expect(errorOf(unknown.body).message).toContain("no such webhook delivery")
    }).pipe(Effect.provide(withWebhooks)))

  it.scoped("named in the body they do the same; wrong events are a 400 that says why", () =>
    Effect.gen(function*() {
      const receiver = yield* TestReceiver.start()
      const { alice, echo } = yield* seed
      const appexec = yield* Appexec.Appexec
      const hook = `?webhook=${encodeURIComponent(receiver.url())}`
      const answer = yield* start(echo.appId, alice.key, hook, {
        inputs: { prompt: "hi" },
        webhookEvents: ["start"]
      })
      expect(answer.status).toBe(202)
      const id = (answer.body as { data: { executionId: string } }).data.executionId
      yield* appexec.executions.await(id)
      expect(bodyOf(yield* receiver.next)).toMatchObject({ type: "start" })

      const refusals: ReadonlyArray<readonly [string, Record<string, unknown>, string]> = [
        [`${hook}&webhookEvents=start`, { inputs: { prompt: "hi" }, webhookEvents: ["completed"] }, "different events"],
        [hook, { inputs: { prompt: "hi" }, webhookEvents: "start" }, "must be a list"],
        [`${hook}&webhookEvents=start,finish`, { inputs: { prompt: "hi" } }, "'finish'"],
        [`${hook}&webhookEvents=`, { inputs: { prompt: "hi" } }, "''"],
        ["?webhookEvents=start", { inputs: { prompt: "hi" } }, "needs a `webhook`"],
        [hook, { inputs: { prompt: "hi" }, webhookEvents: [] }, "names no event"]
      ]
      for (const [query, body, says] of refusals) {
        const refused = yield* start(echo.appId, alice.key, query, body)
        expect(refused.status, `${query} ${JSON.stringify(body)}`).toBe(400)
        expect(errorOf(refused.body).code).toBe("invalid_request")
        expect(errorOf(refused.body).message).toContain(says)
      }
    }).pipe(Effect.provide(withWebhooks)))
})
