/**
 * Webhooks any receiver can verify, through the compiled command on real sockets
 * (docs/webhooks.md#standard-webhooks, #events): a receiver written from the Standard Webhooks
 * specification alone (`support/StandardWebhooksReceiver.ts`: node:crypto, nothing of appexec)
 * verifies every event of a run that asks for `start`, `output`, `logs` and `completed`, with
 * the `whpk_` key of the published key set. A first attempt it refuses is sent again with the
 * same `webhook-id` and a new timestamp; each event is a message of its own; the interface's own
 * signature of the same requests still verifies as before (node:crypto, from the JWK's `x`).
 * On SQLite (`serve` runs everything) and on PostgreSQL (an API process, and a worker process that
 * runs the execution, follows it for its events and delivers them).
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { createPublicKey, verify } from "node:crypto"
import { writeFileSync } from "node:fs"
import { createServer } from "node:http"
import type { AddressInfo } from "node:net"
import { join } from "node:path"
import { backends } from "./support/Backends.js"
import { spawnAppexec, startServe, tempDataDir } from "./support/ServeProcess.js"
import * as StandardWebhooksReceiver from "./support/StandardWebhooksReceiver.js"

/** An origin on 127.0.0.1 that answers `{"text": "slow answer"}` after `delayMs`; closed with the scope. */
const startOrigin = (delayMs: number) =>
  Effect.acquireRelease(
    Effect.async<{ readonly url: string; readonly close: () => void }>((resume) => {
      const server = createServer((req, res) => {
        req.resume()
        setTimeout(
          () => res.writeHead(200, { "content-type": "application/json" }).end("{\"text\":\"slow answer\"}"),
          delayMs
        )
      })
      server.listen(0, "127.0.0.1", () =>
        resume(Effect.succeed({
          url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/answer`,
          close: () => server.close()
        })))
    }),
    (origin) => Effect.sync(() => origin.close())
  )

/** An output after 600 ms; another after a call that logs a line as it goes and one when answered. */
const eventsApp = (originUrl: string) => ({
  name: "Events",
  public: true,
  nodes: [
    { id: "prompt", type: "input.text", label: "Prompt", config: { name: "prompt", required: true } },
    { id: "wait", type: "util.delay", label: "Wait", config: { ms: 600 } },
    { id: "shout", type: "text.template", label: "Shout", config: { template: "{{wait}}!" } },
    { id: "fast", type: "output.text", label: "Fast" },
    { id: "call", type: "http.request", label: "Call", config: { url: originUrl, pick: "/text" } },
    { id: "slow", type: "output.text", label: "Slow" }
  ],
  edges: [
    { source: "prompt", target: "wait" },
    { source: "wait", target: "shout" },
    { source: "shout", target: "fast" },
    { source: "prompt", target: "call" },
    { source: "call", target: "slow" }
  ]
})

interface Body {
  readonly type: string
  readonly timestamp: string
  readonly data: {
    readonly executionId: string
    readonly status: string
    readonly outputs: ReadonlyArray<{ readonly status: string }>
  }
  readonly logs?: ReadonlyArray<{ readonly message: string; readonly nodeId: string }>
}

/** The published key set, as this test reads it. */
interface KeySet {
  readonly keys: ReadonlyArray<
    { readonly kty: string; readonly crv: string; readonly x: string; readonly whpk: string }
  >
}

/** `GET /v1/executions/{id}/webhook`, as this test reads it. */
interface DeliveryLog {
  readonly data: {
    readonly events: ReadonlyArray<string>
    readonly deliveries: ReadonlyArray<{
      readonly id: string
      readonly type: string
      readonly status: string
      readonly attempts: ReadonlyArray<{ readonly statusCode: number | null }>
    }>
  }
}

for (const backend of backends) {
  describe(`Standard Webhooks on ${backend.name}`, () => {
    it.scopedLive(
      "a receiver written from the specification verifies every event of a run; a retry keeps its webhook-id",
      () =>
        Effect.gen(function*() {
          const env = yield* backend.env
          const origin = yield* startOrigin(1500)
          const appsDir = yield* tempDataDir
          writeFileSync(join(appsDir, "events.json"), JSON.stringify(eventsApp(origin.url)))
          const separate = backend.name === "postgres"
          // Retries are the worker's setting: serve --no-worker refuses it.
          const workerFlags = ["--allow-private-networks", "--webhook-retry-delays", "1s"]
          const api = yield* startServe(yield* tempDataDir, [
            "--apps",
            appsDir,
            ...(separate ? ["--no-worker", "--allow-private-networks"] : workerFlags)
          ], env)
          if (separate) {
            const worker = yield* spawnAppexec(["worker", "--data", yield* tempDataDir, ...workerFlags], env)
            yield* worker.waitFor(/appexec worker is running/, "stderr", "20 seconds")
          }
          // The first attempt of the start event is refused: it comes again, the same message.
          const receiver = yield* StandardWebhooksReceiver.start((_, seen, rawBody) =>
            !seen && JSON.parse(rawBody.toString("utf8")).type === "start" ? 503 : 204
          )
          const headers = { "x-api-key": api.key, "content-type": "application/json" }
          const json = <A>(path: string, init: RequestInit = {}) =>
            Effect.promise(() =>
              fetch(`${api.baseUrl}${path}`, { headers, ...init }).then((r) => r.json() as Promise<A>)
            )
          const keySet = yield* json<KeySet>("/v1/webhooks/signing-key")
          for (const key of keySet.keys) receiver.trust(key.whpk)
          const apps = yield* json<{ data: Array<{ appId: string; name: string }> }>("/v1/apps")
          const appId = apps.data.find((a) => a.name === "Events")!.appId
          const hook = encodeURIComponent(receiver.url)
          const started = yield* json<{ data: { executionId: string } }>(
            `/v1/apps/${appId}/executions?webhook=${hook}&webhookEvents=start,output,logs,completed`,
            { method: "POST", body: JSON.stringify({ inputs: { prompt: "hi" } }) }
          )
          const executionId = started.data.executionId

          // Until the completion, the start's second attempt, the output with both outputs and both
          // log lines have come (events go out each on its own: the last output or lines may follow
          // the completion).
          const messages: Array<StandardWebhooksReceiver.Message> = []
          const bodyOf = (m: StandardWebhooksReceiver.Message): Body => JSON.parse(m.rawBody.toString("utf8"))
          const all = (type: string) => messages.map(bodyOf).filter((b) => b.type === type)
          while (
            all("completed").length === 0 || all("start").length < 2 ||
            !all("output").some((b) => b.data.outputs.every((o) => o.status === "completed")) ||
            all("logs").flatMap((b) => b.logs ?? []).length < 2
          ) {
            messages.push(yield* receiver.next())
          }

          // Every request verifies as the specification says, with the published whpk_ key.
          expect(messages.map((m) => m.verified)).toEqual(messages.map(() => true))
          const ofType = (type: string) => messages.filter((m) => bodyOf(m).type === type)
          const [refused, retried] = ofType("start")
          expect(refused!.answer).toBe(503)
          expect(retried!.seen).toBe(true)
          expect(retried!.id).toBe(refused!.id)
          expect(Number(retried!.timestamp)).toBeGreaterThan(Number(refused!.timestamp))
          expect(bodyOf(retried!).data).toMatchObject({ executionId, status: "running" })

          const outputs = ofType("output")
          expect(outputs.length).toBeGreaterThanOrEqual(2)
          const settled = outputs.map((m) => bodyOf(m).data.outputs.filter((o) => o.status === "completed").length)
          expect(settled.at(-1)).toBe(2)
          const lines = ofType("logs").flatMap((m) => bodyOf(m).logs!)
          expect(lines.map((l) => [l.nodeId, l.message.split(":")[0]])).toEqual([
            ["call", "GET 127.0.0.1"],
            ["call", "GET 127.0.0.1"]
          ])
          const [completed] = ofType("completed")
          expect(bodyOf(completed!).data).toMatchObject({ executionId, status: "completed" })

          // One message per event: the only id seen twice is the retried start's.
          const ids = messages.filter((m) => !m.seen).map((m) => m.id)
          expect(new Set(ids).size).toBe(ids.length)
          expect(ids.length).toBe(messages.length - 1)

          // The interface's own signature of the same requests verifies as it always did.
          for (const m of messages) {
            const timestamp = String(m.headers["x-service-webhook-timestamp"])
            expect(m.headers["x-service-webhook-request-id"]).toBe(executionId)
            expect(
              keySet.keys.some((jwk) =>
                verify(
                  null,
                  Buffer.concat([Buffer.from(`${timestamp}.`), m.rawBody]),
                  createPublicKey({ key: { kty: jwk.kty, crv: jwk.crv, x: jwk.x }, format: "jwk" }),
                  Buffer.from(String(m.headers["x-service-webhook-signature"]), "hex")
                )
              )
            ).toBe(true)
          }

          // The API (on PostgreSQL another process) lists every delivery, by the id it was sent with,
          // once each answer is recorded (polled: another process records them).
          const deadline = Date.now() + 20_000
          let log = yield* json<DeliveryLog>(`/v1/executions/${executionId}/webhook`)
          while (log.data.deliveries.some((d) => d.status !== "delivered")) {
            if (Date.now() > deadline) return yield* Effect.dieMessage(`not all delivered: ${JSON.stringify(log)}`)
            yield* Effect.sleep("100 millis")
            log = yield* json<DeliveryLog>(`/v1/executions/${executionId}/webhook`)
          }
          expect(log.data.events).toEqual(["start", "output", "logs", "completed"])
          expect(log.data.deliveries.map((d) => d.id).sort()).toEqual([...ids].sort())
          expect(log.data.deliveries.find((d) => d.type === "start")!.attempts.map((a) => a.statusCode)).toEqual([
            503,
            204
          ])
        }),
      90_000
    )
  })
}
