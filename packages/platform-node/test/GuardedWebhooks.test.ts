/**
 * Webhooks through the guarded Node client: a literal private address is refused at start, with
 * the option named; deliveries to names of private addresses are refused, recorded with the
 * consumer-safe message, and not retried.
 */
import { Ids } from "@appexec/api"
import { Appexec, WebhookOutbox } from "@appexec/core"
import { TestApps, TestHarness } from "@appexec/testing"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Fiber, TestClock } from "effect"
import { NodeOutboundHttp } from "../src/index.js"

const echo = TestApps.echo

/** Starts `definition` with a webhook and waits (in virtual time) until it has ended. */
const runWithWebhook = (definition: unknown, webhook: string) =>
  Effect.gen(function*() {
    const appexec = yield* Appexec.Appexec
    const app = yield* appexec.apps.import(definition)
    const principal = yield* TestHarness.signIn()
    const started = yield* appexec.executions.start(principal, app.appId, { prompt: "hi" }, { webhook })
    const waiting = yield* Effect.fork(appexec.executions.await(started.executionId))
    yield* TestClock.adjust(0)
    yield* Fiber.join(waiting)
    return { executionId: Ids.ExecutionId.make(started.executionId) }
  })

const harness = (options: TestHarness.Options<readonly []>) =>
  TestHarness.layer({ webhooks: true, ...options, config: { pollInterval: 60_000, webhookPollInterval: 5_000 } })

const deliveryOf = (executionId: Ids.ExecutionId) =>
  Effect.gen(function*() {
    const entries = yield* (yield* WebhookOutbox.WebhookOutbox).forExecution(executionId)
    expect(entries).toHaveLength(1)
    return entries[0]!
  })

describe("webhooks through the guarded client", () => {
  it.scoped("a webhook URL on a literal private address is refused at start by default, naming the option", () =>
    Effect.gen(function*() {
      const refused = yield* Effect.flip(runWithWebhook(echo, "http://127.0.0.1:9/hook"))
      expect(refused).toMatchObject({ _tag: "InvalidWebhookUrl", code: "invalid_webhook_url" })
      expect(refused.message).toContain("127.0.0.1 is a loopback address")
      expect(refused.message).toContain("--allow-private-networks")
    }).pipe(Effect.provide(harness({ outbound: NodeOutboundHttp.layer({ allowPrivateNetworks: false }) }))))

  it.scoped("a name of a loopback address is accepted at start, then refused at delivery and not retried", () =>
    Effect.gen(function*() {
      const { executionId } = yield* runWithWebhook(echo, "http://localhost:9/hook")
      yield* TestClock.adjust("10 minutes")
      const entry = yield* deliveryOf(executionId)
      expect(entry.status).toBe("failed")
      expect(entry.attempts).toEqual([
        { at: 0, statusCode: null, error: "Address not allowed: outbound requests reach public addresses only." }
      ])
    }).pipe(
      Effect.provide(
        harness({
          outbound: NodeOutboundHttp.layer({
            allowPrivateNetworks: false,
            resolver: () => Effect.succeed([{ address: "127.0.0.1", family: 4 }])
          })
        })
      )
    ))

  it.scoped("a host name that resolves to a private address is refused after resolution", () =>
    Effect.gen(function*() {
      const { executionId } = yield* runWithWebhook(echo, "https://hooks.internal.example/hook")
      yield* TestClock.adjust("10 minutes")
      const entry = yield* deliveryOf(executionId)
      expect(entry.status).toBe("failed")
      expect(entry.attempts.map((a) => a.error)).toEqual([
        "Address not allowed: outbound requests reach public addresses only."
      ])
    }).pipe(
      Effect.provide(
        harness({
          outbound: NodeOutboundHttp.layer({
            allowPrivateNetworks: false,
            resolver: () => Effect.succeed([{ address: "10.0.0.7", family: 4 }])
          })
        })
      )
    ))
})
