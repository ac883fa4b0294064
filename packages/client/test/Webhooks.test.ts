import * as NodeWebhook from "@appexec/client/node"
import { SigningKeys, WebhookDispatcher } from "@appexec/core"
import { describe, expect, it } from "@effect/vitest"
import { type Clock, Effect, Either, Queue, Runtime, TestClock } from "effect"
import { createServer, type IncomingHttpHeaders } from "node:http"
import type { AddressInfo } from "node:net"
import { AppexecClient, type WebhookKeys } from "../src/index.js"
import { instance, serve } from "./ServedInstance.js"

interface Received {
  readonly rawBody: Uint8Array
  readonly headers: IncomingHttpHeaders
  readonly outcome: Either.Either<WebhookKeys.VerifiedDelivery, { readonly _tag: string; readonly reason?: string }>
}

/** A webhook receiver on a socket: verifies every delivery with `client`, answers 204 or 401, reports it. */
const receiver = (client: AppexecClient.AppexecClientService) =>
  Effect.gen(function*() {
    const received = yield* Queue.unbounded<Received>()
    const runFork = Runtime.runFork(yield* Effect.runtime<never>())
    const server = createServer((req, res) => {
      runFork(
        Effect.gen(function*() {
          const rawBody = yield* NodeWebhook.readRawBody(req)
          const outcome = yield* Effect.either(client.webhooks.verify(rawBody, req.headers))
          yield* Effect.sync(() => res.writeHead(Either.isRight(outcome) ? 204 : 401).end())
          yield* Queue.offer(received, { rawBody, headers: req.headers, outcome })
        }).pipe(Effect.orDie)
      )
    })
    const port = yield* Effect.acquireRelease(
      Effect.async<number>((resume) => {
        server.listen(0, "127.0.0.1", () => resume(Effect.succeed((server.address() as AddressInfo).port)))
      }),
      () =>
        Effect.async<void>((resume) => {
          server.closeAllConnections()
          server.close(() => resume(Effect.void))
        })
    )
    return { url: `http://127.0.0.1:${port}/hooks/appexec`, received }
  })

/**
 * The test's clock read `seconds` later, for one verification (moving the `TestClock` that far
 * would run every timer of the served instance on the way).
 */
const aheadBy = (seconds: number) =>
  Effect.map(Effect.clock, (clock): Clock.Clock => ({
    ...clock,
    unsafeCurrentTimeMillis: () => clock.unsafeCurrentTimeMillis() + seconds * 1000,
    currentTimeMillis: Effect.map(clock.currentTimeMillis, (ms) => ms + seconds * 1000)
  }))

/**
 * One pass of the instance's webhook dispatcher: the completed executions' deliveries go out now
 * (signed and sent by core over real HTTP) instead of whenever the background loop wakes.
 */
const dispatch = Effect.flatMap(WebhookDispatcher.make, (dispatcher) => dispatcher.dispatchDue)

/** Waits for the execution to end (the app has no delay: one read), then dispatches its webhook. */
const deliver = (client: AppexecClient.AppexecClientService, executionId: string) =>
  Effect.zipRight(client.executions.wait(executionId, { interval: 0 }), dispatch)

describe("webhook verification against a served instance", () => {
  it.scoped("verifies deliveries across a key rotation, fetching the key set again once", () =>
    Effect.gen(function*() {
      const served = yield* serve()
      const keyRequests: Array<string> = []
      const client = yield* AppexecClient.make({
        baseUrl: served.baseUrl,
        apiKey: served.apiKey,
        fetch: (input, init) => {
          if (String(input).endsWith("/v1/webhooks/signing-key")) keyRequests.push(String(input))
          return globalThis.fetch(input, init)
        }
      })
      const hook = yield* receiver(client)

      const first = yield* client.executions.start(served.parseAppId, { text: "[1]" }, { webhook: hook.url })
      expect(first.webhookUrl).toBe(hook.url)
      yield* deliver(client, first.executionId)
      const one = yield* Queue.take(hook.received)
      const delivered = Either.getOrThrow(one.outcome)
      expect(delivered.requestId).toBe(first.executionId)
      expect(delivered.execution).toMatchObject({ executionId: first.executionId, status: "completed" })
      expect(keyRequests).toHaveLength(1)

      const rotated = yield* SigningKeys.rotate
      expect(rotated.kid).not.toBe(delivered.kid)
      yield* TestClock.adjust("15 seconds")

      const second = yield* client.executions.start(served.parseAppId, { text: "[2]" }, { webhook: hook.url })
      yield* deliver(client, second.executionId)
      const two = yield* Queue.take(hook.received)
      expect(Either.getOrThrow(two.outcome)).toMatchObject({ requestId: second.executionId, kid: rotated.kid })
      expect(keyRequests).toHaveLength(2)

      // Later deliveries verify from the cache.
      const third = yield* client.executions.start(served.parseAppId, { text: "[3]" }, { webhook: hook.url })
      yield* deliver(client, third.executionId)
      expect(Either.getOrThrow((yield* Queue.take(hook.received)).outcome).requestId).toBe(third.executionId)
      expect(keyRequests).toHaveLength(2)

      // A changed body does not verify.
      const tampered = new TextDecoder().decode(two.rawBody).replace("[2]", "[9]")
      const badSignature = yield* Effect.flip(client.webhooks.verify(tampered, two.headers))
      expect(badSignature).toMatchObject({ _tag: "WebhookVerificationError", reason: "bad_signature" })

      // Within 300 s a delivery still verifies; replayed later, it is refused.
      const late = (seconds: number) =>
        Effect.flatMap(aheadBy(seconds), (clock) =>
          Effect.withClock(client.webhooks.verify(two.rawBody, two.headers), clock))
      expect((yield* late(299)).requestId).toBe(second.executionId)
      const stale = yield* Effect.flip(late(301))
      expect(stale).toMatchObject({ _tag: "WebhookVerificationError", reason: "stale_timestamp" })
    }).pipe(Effect.provide(instance)))

  it.scoped("verifies every event's Standard Webhooks signature too, across a key rotation", () =>
    Effect.gen(function*() {
      const served = yield* serve()
      const client = yield* AppexecClient.make({ baseUrl: served.baseUrl, apiKey: served.apiKey })
      const hook = yield* receiver(client)
      const standard = (received: Received) =>
        client.webhooks.verify(received.rawBody, received.headers, { scheme: "standard" })

      const first = yield* client.executions.start(served.parseAppId, { text: "[1]" }, {
        webhook: hook.url,
        webhookEvents: ["start", "completed"]
      })
      yield* deliver(client, first.executionId)
      const both = [yield* Queue.take(hook.received), yield* Queue.take(hook.received)]
      const verified = yield* Effect.forEach(both, standard)
      expect(verified.map((v) => [v.scheme, v.event, v.execution.status]).sort()).toEqual([
        ["standard", "completed", "completed"],
        ["standard", "start", "running"]
      ])
      verified.forEach((v, i) => {
        expect(v.webhookId).toBe(both[i]!.headers["webhook-id"])
        expect(v.requestId).toBe(first.executionId)
        // The service's signature of the same request verifies too, and names the same message.
        expect(Either.getOrThrow(both[i]!.outcome)).toMatchObject({
          scheme: "service",
          event: v.event,
          webhookId: v.webhookId
        })
      })
      const altered = { ...both[0]!.headers, "webhook-id": "another-message" }
      expect(yield* Effect.flip(client.webhooks.verify(both[0]!.rawBody, altered, { scheme: "standard" })))
        .toMatchObject({
          reason: "bad_signature"
        })

      const rotated = yield* SigningKeys.rotate
      yield* TestClock.adjust("15 seconds")
      const second = yield* client.executions.start(served.parseAppId, { text: "[2]" }, { webhook: hook.url })
      yield* deliver(client, second.executionId)
      const after = yield* Queue.take(hook.received)
      expect(yield* standard(after)).toMatchObject({ kid: rotated.kid, event: "completed", scheme: "standard" })
    }).pipe(Effect.provide(instance)))

  it.scoped("refuses a delivery without a signature", () =>
    Effect.gen(function*() {
      const served = yield* serve()
      const client = yield* AppexecClient.make({ baseUrl: served.baseUrl, apiKey: served.apiKey })
      const error = yield* Effect.flip(client.webhooks.verify("{}", { "x-service-webhook-timestamp": "0" }))
      expect(error).toMatchObject({ _tag: "WebhookVerificationError", reason: "missing_header" })
    }).pipe(Effect.provide(instance)))
})
