import { Appexec, NodeType, SigningKeys, WebhookVerifier } from "@appexec/core"
import { TestHarness, TestReceiver } from "@appexec/testing"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Either, Schema } from "effect"
import { createPublicKey, verify } from "node:crypto"

const broken = NodeType.defineNode({
  type: "test.broken",
  description: "Always fails",
  role: "process",
  inputs: { min: 1, max: 1 },
  config: Schema.Struct({}),
  run: () => Effect.fail(new NodeType.NodeFailure({ message: "the test node broke" }))
})

const app = (name: string, middle: string) => ({
  name,
  public: true,
  nodes: [
    { id: "prompt", type: "input.text", label: "Prompt", config: { name: "prompt", required: true } },
    {
      id: "middle",
      type: middle,
      label: "Middle",
      ...(middle === "text.template" ? { config: { template: "echo: {{prompt}}" } } : {})
    },
    { id: "result", type: "output.text", label: "Result" }
  ],
  edges: [
    { source: "prompt", target: "middle" },
    { source: "middle", target: "result" }
  ]
})

/** Checks a signature with node:crypto alone, from the published JWK: no appexec code involved. */
const verifiedByNodeCrypto = (
  jwk: { kty: string; crv: string; x: string },
  timestamp: string,
  rawBody: Uint8Array,
  signatureHex: string
) =>
  verify(
    null,
    Buffer.concat([Buffer.from(`${timestamp}.`), rawBody]),
    createPublicKey({ key: { kty: jwk.kty, crv: jwk.crv, x: jwk.x }, format: "jwk" }),
    Buffer.from(signatureHex, "hex")
  )

describe("webhook delivery to a real receiver on 127.0.0.1", () => {
  it.scopedLive("completed and failed executions each arrive as one signed POST that node:crypto verifies", () =>
    Effect.gen(function*() {
      const receiver = yield* TestReceiver.start()
      yield* Effect.gen(function*() {
        const appexec = yield* Appexec.Appexec
        const principal = yield* TestHarness.signIn()
        const keySet = yield* Effect.flatMap(SigningKeys.SigningKeys, (k) => k.keySet)
        expect(keySet.keys).toHaveLength(1)
        const jwk = keySet.keys[0]!

        for (
          const [definition, expected] of [
            [app("Echo", "text.template"), "completed"],
            [app("Broken", "test.broken"), "failed"]
          ] as const
        ) {
          const imported = yield* appexec.apps.import(definition)
          const started = yield* appexec.executions.start(principal, imported.appId, { prompt: "hi" }, {
            webhook: receiver.url(`/hook/${expected}`)
          })
          const request = yield* receiver.next
          const done = yield* appexec.executions.get(principal, started.executionId)
          expect(done.status).toBe(expected)

          expect(request.method).toBe("POST")
          expect(request.url).toBe(`/hook/${expected}`)
          expect(request.headers["content-type"]).toBe("application/json")
          expect(request.headers["x-service-webhook-request-id"]).toBe(started.executionId)
          expect(request.headers["x-service-webhook-user-id"]).toBe(principal.userId)
          const timestamp = String(request.headers["x-service-webhook-timestamp"])
          expect(Math.abs(Number(timestamp) - Date.now() / 1000)).toBeLessThan(60)
          const signature = String(request.headers["x-service-webhook-signature"])
          expect(signature).toMatch(/^[0-9a-f]{128}$/)

          expect(verifiedByNodeCrypto(jwk, timestamp, request.rawBody, signature)).toBe(true)
          const tampered = new TextEncoder().encode(
            new TextDecoder().decode(request.rawBody).replace(expected, "queued")
          )
          expect(verifiedByNodeCrypto(jwk, timestamp, tampered, signature)).toBe(false)
          expect(Either.isRight(WebhookVerifier.verifyWebhook(request.rawBody, request.headers, keySet))).toBe(true)

          expect(JSON.parse(new TextDecoder().decode(request.rawBody))).toEqual({
            data: JSON.parse(JSON.stringify(done))
          })
        }
      }).pipe(
        Effect.provide(TestHarness.layer({ nodes: [broken], webhooks: true }))
      )
    }))
})
