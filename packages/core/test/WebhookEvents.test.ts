/**
 * Webhook events beyond completion (docs/webhooks.md#events), on memory in virtual time: a start
 * with `webhookEvents` sends `start`, `output` and `logs` events as the run makes them (`output`
 * and `logs` at most once per 500 ms each, the last always sent), each its own delivery with its
 * own `webhook-id` and a `type`, signed in both schemes and retried like the completion webhook,
 * which then carries its `type` too. Without `webhookEvents` the completion webhook is the only
 * one, its body the interface's. The delivery log and redelivery cover every event.
 */
import { Ids } from "@appexec/api"
import {
  Appexec,
  NodeType,
  OutboundHttp,
  SigningKeys,
  WebhookDispatcher,
  WebhookOutbox,
  WebhookVerifier
} from "@appexec/core"
import { TestApps, TestHarness } from "@appexec/testing"
import { describe, expect, it } from "@effect/vitest"
import { Duration, Effect, Either, Fiber, type Layer, Schema, TestClock } from "effect"
import * as ScriptedHttp from "./fixtures/ScriptedHttp.js"

/** `test.drip`: logs `lines` lines, one every `every` ms, then passes its input on. */
const drip = NodeType.defineNode({
  type: "test.drip",
  description: "Logs a line at a time.",
  role: "process",
  inputs: { min: 1, max: 1 },
  config: Schema.Struct({ lines: Schema.Number, every: Schema.Number }),
  run: ({ config, log, upstream }) =>
    Effect.as(
      Effect.forEach(
        Array.from({ length: config.lines }, (_, i) => i + 1),
        (i) => Effect.zipRight(Effect.sleep(Duration.millis(config.every)), log(`line ${i}`))
      ),
      upstream[0]!.value
    )
})

/** Three outputs settle at 100, 200 and 300 ms; the fourth after ten log lines, one every 100 ms. */
const events = {
  name: "Events",
  public: true,
  nodes: [
    { id: "prompt", type: "input.text", label: "Prompt", config: { name: "prompt", required: true } },
    ...[100, 200, 300].flatMap((ms, i) => [
      { id: `wait${i}`, type: "util.delay", label: `Wait ${i}`, config: { ms } },
      { id: `out${i}`, type: "output.text", label: `Out ${i}` }
    ]),
    { id: "drip", type: "test.drip", label: "Drip", config: { lines: 10, every: 100 } },
    { id: "last", type: "output.text", label: "Last" }
  ],
  edges: [
    ...[0, 1, 2].flatMap((i) => [{ source: "prompt", target: `wait${i}` }, { source: `wait${i}`, target: `out${i}` }]),
    { source: "prompt", target: "drip" },
    { source: "drip", target: "last" }
  ]
}

/** The instance with its dispatcher, sending through `outbound`. */
const harness = (options: { readonly outbound: Layer.Layer<OutboundHttp.OutboundHttp> }) =>
  TestHarness.layer({ webhooks: true, nodes: [drip], outbound: options.outbound, config: { pollInterval: 60_000 } })

const textOf = (body: OutboundHttp.OutboundRequest["body"]) =>
  typeof body === "string" ? body : new TextDecoder().decode(body)

interface Received {
  readonly at: number
  readonly headers: Record<string, string>
  readonly text: string
  readonly body: {
    readonly type?: string
    readonly timestamp?: string
    readonly data: { readonly status: string; readonly outputs: ReadonlyArray<{ readonly status: string }> }
    readonly logs?: ReadonlyArray<{ readonly message: string; readonly nodeId: string | null }>
  }
}

const received = (sent: ReadonlyArray<ScriptedHttp.Sent>): Array<Received> =>
  sent.map(({ at, request }) => {
    const text = textOf(request.body)
    return { at, headers: OutboundHttp.wireHeaders(request.headers), text, body: JSON.parse(text) }
  })

/** Starts `definition` with a webhook (and its events, when given) and waits until it has ended. */
const start = (definition: unknown, webhookEvents?: ReadonlyArray<unknown>) =>
  Effect.gen(function*() {
    const appexec = yield* Appexec.Appexec
    const app = yield* appexec.apps.import(definition)
    const principal = yield* TestHarness.signIn()
    const started = yield* appexec.executions.start(principal, app.appId, { prompt: "hi" }, {
      webhook: "https://hooks.example/events",
      ...(webhookEvents === undefined ? {} : { webhookEvents })
    })
    const done = yield* Effect.fork(appexec.executions.await(started.executionId))
    return { appexec, principal, executionId: Ids.ExecutionId.make(started.executionId), done }
  })

describe("webhook events", () => {
  it.scoped("start, output and logs as the run makes them, throttled, then the completion, each its own message", () =>
    Effect.gen(function*() {
      const http = yield* ScriptedHttp.make(() => ScriptedHttp.status(204))
      yield* Effect.gen(function*() {
        const { appexec, done, executionId, principal } = yield* start(events, ["completed", "logs", "output", "start"])
        yield* TestClock.adjust("5 seconds")
        yield* Fiber.join(done)
        const all = received(http.sent)
        const ofType = (type: string) => all.filter((r) => r.body.type === type)

        // Every body says its type, and so does the completion's.
        expect(all.every((r) => r.body.type !== undefined && r.body.timestamp !== undefined)).toBe(true)
        const [begun] = ofType("start")
        expect(ofType("start")).toHaveLength(1)
        expect(begun!.at).toBe(0)
        expect(begun!.body.data.status).toBe("running")

        // Outputs settle at 100, 200, 300 and 1000 ms: one event at once, the held-back change at
        // the end of the window, the last one when the next window opens (after the end).
        const outputs = ofType("output")
        expect(outputs.map((r) => r.at)).toEqual([100, 600, 1100])
        expect(outputs.map((r) => r.body.data.outputs.filter((o) => o.status === "completed").length)).toEqual([
          1,
          3,
          4
        ])

        // Log lines: each once, in order, the last one too, events at least 500 ms apart.
        const logs = ofType("logs")
        expect(logs.length).toBeGreaterThanOrEqual(2)
        expect(logs.flatMap((r) => r.body.logs!.map((l) => l.message))).toEqual(
          Array.from({ length: 10 }, (_, i) => `line ${i + 1}`)
        )
        expect(logs.every((r) => r.body.logs!.every((l) => l.nodeId === "drip"))).toBe(true)
        logs.slice(1).forEach((r, i) => expect(r.at - logs[i]!.at).toBeGreaterThanOrEqual(500))

        const [completed] = ofType("completed")
        expect(ofType("completed")).toHaveLength(1)
        expect(completed!.body.data.status).toBe("completed")
        expect(completed!.at).toBe(1000)

        // Each event a message of its own, signed in both schemes.
        const keySet = yield* Effect.flatMap(SigningKeys.SigningKeys, (k) => k.keySet)
        expect(new Set(all.map((r) => r.headers["webhook-id"])).size).toBe(all.length)
        for (const r of all) {
          expect(Either.isRight(WebhookVerifier.verifyWebhook(r.text, r.headers, keySet, { now: r.at }))).toBe(true)
          expect(Either.isRight(WebhookVerifier.verifyStandardWebhook(r.text, r.headers, keySet, { now: r.at }))).toBe(
            true
          )
          expect(r.headers["X-Service-Webhook-Request-Id"]).toBe(executionId)
        }

        // The delivery log lists every delivery, by event, with the message id it was sent with.
        const log = (yield* appexec.executions.webhook(principal, executionId))!
        expect(log.events).toEqual(["start", "output", "logs", "completed"])
        expect(log.status).toBe("delivered")
        expect(log.attempts).toHaveLength(1)
        expect(log.deliveries!.map((d) => d.id).sort()).toEqual(all.map((r) => r.headers["webhook-id"]).sort())
        expect(log.deliveries!.filter((d) => d.type === "output")).toHaveLength(3)
        expect(log.deliveries!.every((d) => d.status === "delivered" && d.attempts.length === 1)).toBe(true)
      }).pipe(Effect.provide(harness({ outbound: http.layer })))
    }))

  it.scoped("without webhookEvents the completion webhook is the only one, its body the interface's", () =>
    Effect.gen(function*() {
      const http = yield* ScriptedHttp.make(() => ScriptedHttp.status(204))
      yield* Effect.gen(function*() {
        const { appexec, done, executionId, principal } = yield* start(events)
        yield* TestClock.adjust("5 seconds")
        yield* Fiber.join(done)
        const all = received(http.sent)
        expect(all).toHaveLength(1)
        expect(Object.keys(all[0]!.body)).toEqual(["data"])
        expect(all[0]!.text).toBe(`{"data":${yield* appexec.executions.getJson(principal, executionId)}}`)
        const log = (yield* appexec.executions.webhook(principal, executionId))!
        expect(log.events).toEqual(["completed"])
        expect(log.deliveries!.map((d) => [d.type, d.id])).toEqual([["completed", all[0]!.headers["webhook-id"]]])
      }).pipe(Effect.provide(harness({ outbound: http.layer })))
    }))

  it.scoped("events without completed: no completion webhook; the log's status is that of the events", () =>
    Effect.gen(function*() {
      const http = yield* ScriptedHttp.make(() => ScriptedHttp.status(204))
      yield* Effect.gen(function*() {
        const { appexec, done, executionId, principal } = yield* start(TestApps.echo, ["start"])
        yield* TestClock.adjust("1 second")
        yield* Fiber.join(done)
        expect(received(http.sent).map((r) => r.body.type)).toEqual(["start"])
        const log = (yield* appexec.executions.webhook(principal, executionId))!
        expect(log).toMatchObject({ status: "delivered", attempts: [], events: ["start"] })
        expect(log.deliveries!.map((d) => d.type)).toEqual(["start"])
      }).pipe(Effect.provide(harness({ outbound: http.layer })))
    }))

  it.scoped("an event is retried with the same webhook-id and a fresh timestamp, and can be redelivered by its id", () =>
    Effect.gen(function*() {
      // The first attempt of the start event fails (the completion may be sent before it: an
      // instant run stores its start with its end).
      let refused = false
      const http = yield* ScriptedHttp.make((request) => {
        if (refused || !textOf(request.body).startsWith(`{"type":"start"`)) return ScriptedHttp.status(204)
        refused = true
        return ScriptedHttp.status(503)
      })
      yield* Effect.gen(function*() {
        const { appexec, done, executionId, principal } = yield* start(TestApps.echo, ["start", "completed"])
        yield* TestClock.adjust("10 seconds")
        yield* Fiber.join(done)
        const starts = received(http.sent).filter((r) => r.body.type === "start")
        expect(starts.map((r) => r.at)).toEqual([0, 5_000])
        expect(starts[0]!.headers["webhook-id"]).toBe(starts[1]!.headers["webhook-id"])
        expect(starts.map((r) => r.headers["webhook-timestamp"])).toEqual(["0", "5"])
        expect(starts[0]!.text).toBe(starts[1]!.text)

        const id = starts[0]!.headers["webhook-id"]!
        const armed = yield* appexec.executions.redeliver(executionId, principal, id)
        expect(armed.deliveries!.find((d) => d.id === id)!.status).toBe("pending")
        yield* TestClock.adjust("1 second")
        const again = received(http.sent).filter((r) => r.body.type === "start")
        expect(again).toHaveLength(3)
        expect(again[2]!.headers["webhook-id"]).toBe(id)
        expect(again[2]!.text).toBe(starts[0]!.text)

        const unknown = yield* Effect.flip(appexec.executions.redeliver(executionId, principal, "nope"))
        expect(unknown).toMatchObject({ _tag: "WebhookNotRedeliverable", reason: "unknown_delivery" })
        // The completion webhook is still what a redelivery without an id sends.
        const completion = yield* appexec.executions.redeliver(executionId, principal)
        expect(completion.status).toBe("pending")
      }).pipe(Effect.provide(harness({ outbound: http.layer })))
    }))

  it.effect.each(
    [
      [["start"], undefined, "needs a `webhook`"],
      [[], "https://hooks.example/", "names no event"],
      [["started"], "https://hooks.example/", "'started'"],
      [[3], "https://hooks.example/", "not a string"]
    ] as const
  )("webhookEvents %j with webhook %s is refused: %s", ([webhookEvents, webhook, says]) =>
    Effect.gen(function*() {
      const appexec = yield* Appexec.Appexec
      const app = yield* appexec.apps.import(TestApps.echo)
      const principal = yield* TestHarness.signIn()
      const refused = yield* Effect.flip(
        appexec.executions.start(principal, app.appId, { prompt: "hi" }, {
          webhookEvents,
          ...(webhook === undefined ? {} : { webhook })
        })
      )
      expect(refused._tag).toBe("InvalidRequest")
      expect(refused.message).toContain(says)
    }).pipe(Effect.provide(TestHarness.layer())))

  it.effect("the events are kept in their order, each once", () =>
    Effect.gen(function*() {
      const appexec = yield* Appexec.Appexec
      const app = yield* appexec.apps.import(TestApps.echo)
      const principal = yield* TestHarness.signIn()
      const started = yield* appexec.executions.start(principal, app.appId, { prompt: "hi" }, {
        webhook: "https://hooks.example/",
        webhookEvents: ["completed", "start", "start"]
      })
      const outbox = yield* WebhookOutbox.WebhookOutbox
      expect(yield* outbox.forExecution(Ids.ExecutionId.make(started.executionId))).toEqual([])
      const log = (yield* appexec.executions.webhook(principal, started.executionId))!
      expect(log.events).toEqual(["start", "completed"])
    }).pipe(Effect.provide(TestHarness.layer({ worker: false }))))

  it("the completion event's body is the interface's with its type and end first", () => {
    const view = {
      executionId: "0b7e4a3c-0000-4000-8000-000000000001",
      workflowId: "0b7e4a3c-0000-4000-8000-000000000002",
      appId: "0b7e4a3c-0000-4000-8000-000000000003",
      workspaceId: "w",
      status: "completed" as const,
      outputsJson: "[]",
      inputsJson: "{}",
      errorMessage: null,
      createdAt: 0,
      startedAt: 1,
      completedAt: 2_000,
      attempt: 1
    }
    const typed = WebhookDispatcher.completedBodyOfView(view)
    expect(typed).toBe(
      `{"type":"completed","timestamp":"1970-01-01T00:00:02.000Z",${WebhookDispatcher.bodyOfView(view).slice(1)}`
    )
  })
})
