import { WebhookDispatcher } from "@appexec/core"
import { describe, expect, it } from "@effect/vitest"
import { Deferred, Effect, Either, Queue, Runtime } from "effect"
import { AppexecClient, createClient, type WebhookKeys, WebhookRequest } from "../src/index.js"
import { serveFetch } from "./FetchServer.js"
import { instance, serve } from "./ServedInstance.js"

/** What the fetch-style receiver made of one delivery. */
type Outcome = Either.Either<WebhookKeys.VerifiedDelivery, { readonly _tag: string; readonly reason?: string }>

/** One pass of the instance's webhook dispatcher: the deliveries due go out now, over real HTTP. */
const dispatch = Effect.flatMap(WebhookDispatcher.make, (dispatcher) => dispatcher.dispatchDue)

/** A request to the receiver that appexec did not sign. */
const forged = (url: string, timestamp: number) =>
  Effect.promise(() =>
    fetch(url, {
      method: "POST",
      headers: {
        "content-type": "application/json",
        "x-service-webhook-timestamp": String(timestamp),
        "x-service-webhook-signature": "00".repeat(64)
      },
      body: JSON.stringify({ data: { status: "completed" } })
    })
  )

describe("verifyWebhookRequest: webhooks in a fetch-style server", () => {
  it.scoped("the Effect client verifies appexec's delivery from the web Request and refuses a forged one", () =>
    Effect.gen(function*() {
      const served = yield* serve()
      const client = yield* AppexecClient.make({ baseUrl: served.baseUrl, apiKey: served.apiKey })
      const outcomes = yield* Queue.unbounded<Outcome>()
      const runPromise = Runtime.runPromise(yield* Effect.runtime<never>())
      // The receiver: `(request: Request) => Promise<Response>`, as a Hono or Next.js route would be.
      const receiverUrl = yield* serveFetch((request) =>
        runPromise(
          Effect.gen(function*() {
            const outcome = yield* Effect.either(client.verifyWebhookRequest(request))
            yield* Queue.offer(outcomes, outcome)
            return Either.match(outcome, {
              onRight: () => new Response(null, { status: 204 }),
              onLeft: (error) =>
                Response.json({ error: "reason" in error ? error.reason : error._tag }, { status: 401 })
            })
          })
        )
      )
      const hook = `${receiverUrl}/hooks/appexec`

      const started = yield* client.executions.start(served.parseAppId, { text: "{\"n\":1}" }, { webhook: hook })
      yield* client.executions.wait(started.executionId, { interval: 0 })
      yield* dispatch
      const delivered = Either.getOrThrow(yield* Queue.take(outcomes))
      expect(delivered.requestId).toBe(started.executionId)
      expect(delivered.execution).toMatchObject({ executionId: started.executionId, status: "completed" })
      expect(delivered.execution.outputs[0]).toMatchObject({ type: "json", value: "{\"n\":1}" })

      const now = Math.floor((yield* Effect.clockWith((clock) => clock.currentTimeMillis)) / 1000)
      const refused = yield* forged(hook, now)
      expect(refused.status).toBe(401)
      expect(yield* Effect.promise(() => refused.json())).toEqual({ error: "bad_signature" })
      expect(Either.isLeft(yield* Queue.take(outcomes))).toBe(true)
    }).pipe(Effect.provide(instance)))

  // Live time: the Promise client runs on the default runtime, whose clock is the real one, so
  // the instance signs with the real time too.
  it.scopedLive("the Promise client verifies appexec's delivery from the web Request", () =>
    Effect.gen(function*() {
      const served = yield* serve()
      const appexec = createClient({ baseUrl: served.baseUrl, apiKey: served.apiKey })
      const arrived = yield* Deferred.make<WebhookKeys.VerifiedDelivery>()
      const receiverUrl = yield* serveFetch(async (request) => {
        const delivery = await appexec.verifyWebhookRequest(request).catch(() => undefined)
        if (delivery === undefined) return new Response(null, { status: 401 })
        Deferred.unsafeDone(arrived, Effect.succeed(delivery))
        return new Response(null, { status: 204 })
      })

      const started = yield* Effect.promise(() =>
        appexec.executions.start(served.parseAppId, { text: "[1,2]" }, { webhook: `${receiverUrl}/appexec` })
      )
      yield* Effect.promise(() => appexec.executions.wait(started.executionId, { interval: 0 }))
      yield* dispatch
      const delivery = yield* Deferred.await(arrived)
      expect(delivery.requestId).toBe(started.executionId)
      expect(delivery.execution.status).toBe("completed")

      const refused = yield* forged(`${receiverUrl}/appexec`, Math.floor(Date.now() / 1000))
      expect(refused.status).toBe(401)
    }).pipe(Effect.provide(instance)))
})

describe("WebhookRequest.readRawBody", () => {
  const post = (body: BodyInit, headers: Record<string, string> = {}) =>
    new Request("http://127.0.0.1/hook", { method: "POST", body, headers })

  it.effect("reads the bytes as sent", () =>
    Effect.gen(function*() {
      const bytes = yield* WebhookRequest.readRawBody(post("{\"data\":  1}"))
      expect(new TextDecoder().decode(bytes)).toBe("{\"data\":  1}")
      expect(yield* WebhookRequest.readRawBody(new Request("http://127.0.0.1/hook"))).toEqual(new Uint8Array(0))
    }))

  it.effect("refuses a body over the limit, by its content-length or while reading it", () =>
    Effect.gen(function*() {
      const declared = yield* Effect.flip(WebhookRequest.readRawBody(post("tiny", { "content-length": "2000000" })))
      expect(declared).toMatchObject({
        _tag: "WebhookPayloadError",
        message: "The webhook body is larger than 1048576 bytes."
      })
      const streamed = yield* Effect.flip(WebhookRequest.readRawBody(post("0123456789"), { maxBytes: 5 }))
      expect(streamed).toMatchObject({
        _tag: "WebhookPayloadError",
        message: "The webhook body is larger than 5 bytes."
      })
    }))

  it.effect("refuses a body that was already read", () =>
    Effect.gen(function*() {
      const request = post("{}")
      yield* Effect.promise(() => request.text())
      const error = yield* Effect.flip(WebhookRequest.readRawBody(request))
      expect(error.message).toMatch(/already read/)
    }))
})
