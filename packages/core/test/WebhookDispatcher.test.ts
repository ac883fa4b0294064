import { Ids } from "@appexec/api"
import {
  Appexec,
  ExecutionRecord,
  NodeType,
  OutboundHttp,
  SigningKeys,
  WebhookDispatcher,
  WebhookOutbox,
  WebhookVerifier
} from "@appexec/core"
import { TestApps, TestHarness } from "@appexec/testing"
import { describe, expect, it } from "@effect/vitest"
import { Clock, Effect, Either, Exit, Fiber, Layer, LogLevel, Schema, Scope, TestClock } from "effect"
import * as LogCapture from "./fixtures/LogCapture.js"
import { executionRecord } from "./fixtures/Records.js"
import * as ScriptedHttp from "./fixtures/ScriptedHttp.js"

const echo = TestApps.echo

/** A node that always fails, so an execution ends `failed` at once. */
const broken = NodeType.defineNode({
  type: "test.broken",
  description: "Always fails",
  role: "process",
  inputs: { min: 1, max: 1 },
  config: Schema.Struct({}),
  run: () => Effect.fail(new NodeType.NodeFailure({ message: "the test node broke" }))
})

const failing = {
  name: "Failing",
  public: true,
  nodes: [
    { id: "prompt", type: "input.text", label: "Prompt", config: { name: "prompt", required: true } },
    { id: "boom", type: "test.broken", label: "Boom" },
    { id: "result", type: "output.text", label: "Result" }
  ],
  edges: [
    { source: "prompt", target: "boom" },
    { source: "boom", target: "result" }
  ]
}

/** Starts `definition` with a webhook and waits (in virtual time) until it has ended. */
const runWithWebhook = (definition: unknown, webhook: string) =>
  Effect.gen(function*() {
    const appexec = yield* Appexec.Appexec
    const app = yield* appexec.apps.import(definition)
    const principal = yield* TestHarness.signIn()
    const started = yield* appexec.executions.start(principal, app.appId, { prompt: "hi" }, { webhook })
    const waiting = yield* Effect.fork(appexec.executions.await(started.executionId))
    yield* TestClock.adjust(0)
    const done = yield* Fiber.join(waiting)
    return { done, principal, executionId: Ids.ExecutionId.make(started.executionId) }
  })

/** The harness with coarse polling, so that minutes of virtual time pass in few steps. */
const harness = <const Nodes extends ReadonlyArray<NodeType.Any> = readonly []>(
  options: TestHarness.Options<Nodes> = {}
) =>
  TestHarness.layer({
    webhooks: true,
    ...options,
    config: { pollInterval: 60_000, webhookPollInterval: 5_000, ...options.config }
  })

const deliveryOf = (executionId: Ids.ExecutionId) =>
  Effect.gen(function*() {
    const outbox = yield* WebhookOutbox.WebhookOutbox
    const entries = yield* outbox.forExecution(executionId)
    expect(entries).toHaveLength(1)
    return entries[0]!
  })

const textOf = (body: OutboundHttp.OutboundRequest["body"]) =>
  typeof body === "string" ? body : new TextDecoder().decode(body)

describe("webhook dispatcher (memory, virtual time)", () => {
  it.scoped("a failing receiver gets an attempt at once, then after 5 s, 30 s and 2 min; then the delivery fails", () =>
    Effect.gen(function*() {
      const http = yield* ScriptedHttp.make(() => ScriptedHttp.status(500))
      yield* Effect.gen(function*() {
        const { executionId } = yield* runWithWebhook(echo, "https://hooks.example/done")
        yield* TestClock.adjust("10 minutes")
        expect(http.sent.map((s) => s.at)).toEqual([0, 5_000, 35_000, 155_000])
        const entry = yield* deliveryOf(executionId)
        expect(entry.status).toBe("failed")
        expect(entry.attempts).toEqual([
          { at: 0, statusCode: 500, error: "The receiver answered 500." },
          { at: 5_000, statusCode: 500, error: "The receiver answered 500." },
          { at: 35_000, statusCode: 500, error: "The receiver answered 500." },
          { at: 155_000, statusCode: 500, error: "The receiver answered 500." }
        ])
      }).pipe(Effect.provide(harness({ outbound: http.layer })))
    }))

  it.scoped.each([1, 2])("with %d delivery slot(s), every webhook is delivered", (slots) =>
    Effect.gen(function*() {
      const http = yield* ScriptedHttp.make(() => ScriptedHttp.status(200))
      yield* Effect.gen(function*() {
        const runs = []
        for (let i = 0; i < 3; i++) runs.push(yield* runWithWebhook(echo, `https://hooks.example/${i}`))
        yield* TestClock.adjust("1 second")
        expect(http.sent.map((s) => s.request.url).sort()).toEqual([0, 1, 2].map((i) => `https://hooks.example/${i}`))
        for (const { executionId } of runs) expect((yield* deliveryOf(executionId)).status).toBe("delivered")
      }).pipe(Effect.provide(harness({ outbound: http.layer, config: { webhookConcurrency: slots } })))
    }))

  it.scoped("each attempt's log line is annotated with its execution and delivery ids", () =>
    Effect.gen(function*() {
      const { layer: capture, lines } = LogCapture.make()
      const http = yield* ScriptedHttp.make(() => ScriptedHttp.status(204))
      yield* Effect.gen(function*() {
        const runs = [
          yield* runWithWebhook(echo, "https://hooks.example/a"),
          yield* runWithWebhook(echo, "https://hooks.example/b")
        ]
        yield* TestClock.adjust("1 second")
        for (const { executionId } of runs) {
          const entry = yield* deliveryOf(executionId)
          const line = lines.find((l) => String(l.message).startsWith(`webhook ${executionId} attempt 1: delivered`))
          expect(line?.annotations).toMatchObject({ executionId, deliveryId: entry.deliveryId })
        }
      }).pipe(Effect.provide(harness({ outbound: http.layer, logLevel: LogLevel.Info })), Effect.provide(capture))
    }))

  it.scoped("a failed attempt's log line reads as one sentence: the error, then when the next attempt comes; giving up is a warning", () =>
    Effect.gen(function*() {
      const { layer: capture, lines } = LogCapture.make()
      const http = yield* ScriptedHttp.make(() => ScriptedHttp.status(401))
      yield* Effect.gen(function*() {
        const { executionId } = yield* runWithWebhook(echo, "https://hooks.example/done")
        yield* TestClock.adjust("10 minutes")
        const attempts = lines.map((l) => String(l.message)).filter((m) =>
          m.startsWith(`webhook ${executionId} attempt`)
        )
        expect(attempts).toEqual([
          `webhook ${executionId} attempt 1: The receiver answered 401; next attempt in 5s`,
          `webhook ${executionId} attempt 2: The receiver answered 401; next attempt in 30s`,
          `webhook ${executionId} attempt 3: The receiver answered 401; next attempt in 2m`,
          `webhook ${executionId} attempt 4: The receiver answered 401; giving up`
        ])
        // Retries are Info; giving up is a warning an operator can alert on.
        expect(
          lines.filter((l) => String(l.message).startsWith(`webhook ${executionId} attempt`)).map((l) => l.level.label)
        ).toEqual(["INFO", "INFO", "INFO", "WARN"])
      }).pipe(Effect.provide(harness({ outbound: http.layer, logLevel: LogLevel.Info })), Effect.provide(capture))
    }))

  it.scoped("every attempt is signed afresh with its own timestamp in both schemes and carries the same ids", () =>
    Effect.gen(function*() {
      const http = yield* ScriptedHttp.make(() => ScriptedHttp.status(503))
      yield* Effect.gen(function*() {
        const { executionId, principal, done } = yield* runWithWebhook(echo, "https://hooks.example/done")
        yield* TestClock.adjust("10 minutes")
        const keySet = yield* Effect.flatMap(SigningKeys.SigningKeys, (k) => k.keySet)
        const { deliveryId } = yield* deliveryOf(executionId)
        expect(http.sent).toHaveLength(4)
        const signatures = new Set<string>()
        for (const { at, request } of http.sent) {
          const headers = OutboundHttp.wireHeaders(request.headers)
          // Standard Webhooks beside the interface's headers: the id is the delivery's on every retry.
          expect(headers["webhook-id"]).toBe(deliveryId)
          expect(headers["webhook-timestamp"]).toBe(String(at / 1000))
          expect(headers["webhook-signature"]).toMatch(/^v1a,[A-Za-z0-9+/]{86}==$/)
          expect(WebhookVerifier.verifyStandardWebhook(request.body!, headers, keySet, { now: at })).toEqual(
            Either.right({ webhookId: deliveryId, timestamp: at / 1000, kid: keySet.keys[0]!.kid })
          )
          expect(
            Either.isRight(
              WebhookVerifier.verifyStandardWebhook(request.body!, { ...headers, "webhook-id": "other" }, keySet, {
                now: at
              })
            )
          ).toBe(false)
          expect(request.method).toBe("POST")
          expect(headers["X-Service-Webhook-Timestamp"]).toBe(String(at / 1000))
          expect(headers["X-Service-Webhook-Request-Id"]).toBe(executionId)
          expect(headers["X-Service-Webhook-User-Id"]).toBe(principal.userId)
          expect(headers["content-type"]).toBe("application/json")
          signatures.add(headers["X-Service-Webhook-Signature"]!)
          const verified = WebhookVerifier.verifyWebhook(request.body!, headers, keySet, { now: at })
          expect(Either.isRight(verified)).toBe(true)
          // A receiver two minutes later than the first attempt still accepts the latest one only.
          expect(Either.isRight(WebhookVerifier.verifyWebhook(request.body!, headers, keySet, { now: at + 301_000 })))
            .toBe(false)
          expect(JSON.parse(textOf(request.body))).toEqual({ data: JSON.parse(JSON.stringify(done)) })
        }
        expect(signatures.size).toBe(4)
      }).pipe(Effect.provide(harness({ outbound: http.layer })))
    }))

  it.scoped("a 2xx ends the retries: delivered after two failed attempts", () =>
    Effect.gen(function*() {
      const http = yield* ScriptedHttp.make((_, i) => ScriptedHttp.status(i < 2 ? 500 : 204))
      yield* Effect.gen(function*() {
        const { executionId } = yield* runWithWebhook(echo, "https://hooks.example/done")
        yield* TestClock.adjust("10 minutes")
        expect(http.sent.map((s) => s.at)).toEqual([0, 5_000, 35_000])
        const entry = yield* deliveryOf(executionId)
        expect(entry.status).toBe("delivered")
        expect(entry.attempts.map((a) => [a.statusCode, a.error])).toEqual([
          [500, "The receiver answered 500."],
          [500, "The receiver answered 500."],
          [204, null]
        ])
      }).pipe(Effect.provide(harness({ outbound: http.layer })))
    }))

  it.scoped("a 301 answer is a failed attempt: the redirect is not followed and the delivery is retried", () =>
    Effect.gen(function*() {
      const http = yield* ScriptedHttp.make((_, i) =>
        i === 0 ? ScriptedHttp.status(301, { location: "https://elsewhere.example/" }) : ScriptedHttp.status(200)
      )
      yield* Effect.gen(function*() {
        const { executionId } = yield* runWithWebhook(echo, "https://hooks.example/done")
        yield* TestClock.adjust("1 minute")
        expect(http.sent.map((s) => [s.at, s.request.url])).toEqual([
          [0, "https://hooks.example/done"],
          [5_000, "https://hooks.example/done"]
        ])
        const entry = yield* deliveryOf(executionId)
        expect(entry.status).toBe("delivered")
        expect(entry.attempts[0]).toEqual({
          at: 0,
          statusCode: 301,
          error: "The receiver answered 301 to https://elsewhere.example/; redirects are not followed."
        })
      }).pipe(Effect.provide(harness({ outbound: http.layer })))
    }))

  it.scoped("a failed execution is delivered too, with its error in the body", () =>
    Effect.gen(function*() {
      const http = yield* ScriptedHttp.make(() => ScriptedHttp.status(200))
      yield* Effect.gen(function*() {
        const { executionId, done } = yield* runWithWebhook(failing, "https://hooks.example/failed")
        expect(done.status).toBe("failed")
        yield* TestClock.adjust(0)
        expect(http.sent).toHaveLength(1)
        const body = JSON.parse(textOf(http.sent[0]!.request.body))
        expect(body.data.status).toBe("failed")
        expect(body.data.errorMessage).toContain("the test node broke")
        expect((yield* deliveryOf(executionId)).status).toBe("delivered")
      }).pipe(Effect.provide(harness({ nodes: [broken], outbound: http.layer })))
    }))

  it.scoped("the retry delays and the brand word are configurable", () =>
    Effect.gen(function*() {
      const http = yield* ScriptedHttp.make(() => ScriptedHttp.status(500))
      yield* Effect.gen(function*() {
        const { executionId } = yield* runWithWebhook(echo, "https://hooks.example/done")
        yield* TestClock.adjust("1 minute")
        expect(http.sent.map((s) => s.at)).toEqual([0, 2_000])
        expect(Object.keys(http.sent[0]!.request.headers!)).toEqual(
          expect.arrayContaining([
            "X-Acme-Webhook-Signature",
            "X-Acme-Webhook-Timestamp",
            "X-Acme-Webhook-Request-Id",
            "X-Acme-Webhook-User-Id"
          ])
        )
        expect((yield* deliveryOf(executionId)).status).toBe("failed")
      }).pipe(
        Effect.provide(
          harness({
            outbound: http.layer,
            config: { webhookRetryDelays: [2_000], webhookBrand: "Acme", webhookPollInterval: 1_000 }
          })
        )
      )
    }))

  it.scoped("two dispatchers on one outbox never send the same attempt twice", () =>
    Effect.gen(function*() {
      const http = yield* ScriptedHttp.make(() => ScriptedHttp.status(200))
      yield* Effect.gen(function*() {
        yield* WebhookDispatcher.run
        const ids: Array<string> = []
        for (let i = 0; i < 6; i++) ids.push((yield* runWithWebhook(echo, `https://hooks.example/${i}`)).executionId)
        yield* TestClock.adjust("10 minutes")
        expect(http.sent.map((s) => s.request.headers!["X-Service-Webhook-Request-Id"]).sort()).toEqual([...ids].sort())
      }).pipe(Effect.provide(harness({ outbound: http.layer })))
    }))
})

describe("a stopping webhook dispatcher", () => {
  /** A receiver that answers 200 after 3 s (virtual), recording when each request was sent. */
  const slowReceiver = () => {
    const sent: Array<number> = []
    const layer = Layer.succeed(OutboundHttp.OutboundHttp, {
      request: () =>
        Effect.flatMap(Clock.currentTimeMillis, (at) => {
          sent.push(at)
          return Effect.as(Effect.sleep("3 seconds"), ScriptedHttp.status(200))
        })
    })
    return { sent, layer }
  }

  it.scoped("sends what it claimed before it ends: the attempt under way is recorded, not left to its claim", () =>
    Effect.gen(function*() {
      const receiver = slowReceiver()
      yield* Effect.gen(function*() {
        const scope = yield* Scope.make()
        yield* Scope.extend(WebhookDispatcher.run, scope)
        const { executionId } = yield* runWithWebhook(echo, "https://hooks.example/slow")
        yield* TestClock.adjust("1 second")
        expect(receiver.sent).toEqual([0])
        const closing = yield* Effect.fork(Scope.close(scope, Exit.void))
        yield* TestClock.adjust("2 seconds")
        yield* Fiber.join(closing)
        const entry = yield* deliveryOf(executionId)
        expect(entry.status).toBe("delivered")
        expect(entry.attempts).toEqual([{ at: 0, statusCode: 200, error: null }])
      }).pipe(Effect.provide(harness({ outbound: receiver.layer, webhooks: false })))
    }))

  it.scoped("waits at most a webhook's time limit: a receiver slower than that is left to its claim", () =>
    Effect.gen(function*() {
      const receiver = slowReceiver()
      yield* Effect.gen(function*() {
        const scope = yield* Scope.make()
        yield* Scope.extend(WebhookDispatcher.run, scope)
        const { executionId } = yield* runWithWebhook(echo, "https://hooks.example/slow")
        yield* TestClock.adjust(0)
        const closing = yield* Effect.fork(Scope.close(scope, Exit.void))
        yield* TestClock.adjust("1 second")
        yield* Fiber.join(closing)
        expect(receiver.sent).toEqual([0])
        expect((yield* deliveryOf(executionId)).attempts).toEqual([])
      }).pipe(
        Effect.provide(harness({ outbound: receiver.layer, webhooks: false, config: { webhookTimeout: "1 second" } }))
      )
    }))
})

describe("webhook dispatcher steps", () => {
  it("nextStep: retries after each delay in turn, then fails; a 2xx or a refusal is final", () => {
    const delays = [5_000, 30_000, 120_000]
    const failed = { _tag: "Failed", status: 500, error: "x", retry: true } as const
    expect(WebhookDispatcher.nextStep(failed, 1, 1_000, delays)).toEqual({ retryAt: 6_000 })
    expect(WebhookDispatcher.nextStep(failed, 2, 1_000, delays)).toEqual({ retryAt: 31_000 })
    expect(WebhookDispatcher.nextStep(failed, 3, 1_000, delays)).toEqual({ retryAt: 121_000 })
    expect(WebhookDispatcher.nextStep(failed, 4, 1_000, delays)).toEqual({ final: "failed" })
    expect(WebhookDispatcher.nextStep({ ...failed, retry: false }, 1, 0, delays)).toEqual({ final: "failed" })
    expect(WebhookDispatcher.nextStep({ _tag: "Delivered", status: 200 }, 1, 0, delays)).toEqual({ final: "delivered" })
  })

  it("outcomeOf: only 2xx delivers", () => {
    for (const code of [200, 201, 202, 204, 299]) {
      expect(WebhookDispatcher.outcomeOf(ScriptedHttp.status(code))._tag).toBe("Delivered")
    }
    for (const code of [100, 301, 302, 304, 307, 308, 400, 401, 404, 410, 429, 500, 503]) {
      expect(WebhookDispatcher.outcomeOf(ScriptedHttp.status(code))._tag).toBe("Failed")
    }
  })
})

describe("webhook body", () => {
  it.effect.each(
    [
      ["completed", {}],
      ["failed", { status: "failed", errorMessage: "node 'b' failed" }],
      ["never started", { status: "failed", startedAt: null, errorMessage: "The execution was canceled." }]
    ] as const
  )("is the JSON the WebhookBody schema encodes (%s)", ([, overrides]) =>
    Effect.gen(function*() {
      const r = executionRecord(overrides)
      const viaSchema = yield* Schema.encode(Schema.parseJson(WebhookDispatcher.WebhookBody))({
        data: ExecutionRecord.toExecution(r)
      })
      expect(WebhookDispatcher.bodyOfView(ExecutionRecord.viewOf(r))).toBe(viaSchema)
    }))
})
