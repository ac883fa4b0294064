/**
 * The six endpoints over a real socket: success bodies, both auth headers, access rules and
 * workspace isolation, and every bad input answered in the error body.
 */
import { Api } from "@appexec/api"
import { Appexec } from "@appexec/core"
import { HttpClientRequest } from "@effect/platform"
import { describe, expect, it } from "@effect/vitest"
import { Chunk, Effect, Schema, Stream } from "effect"
import { echoApp, errorOf, get, seed, send, stack, testJwk } from "./fixtures.js"

const post = (path: string, key: string, body: string, contentType = "application/json") =>
  send(
    HttpClientRequest.post(path).pipe(
      HttpClientRequest.setHeader("x-api-key", key),
      HttpClientRequest.bodyText(body, contentType)
    )
  )

describe("endpoints", () => {
  it.scoped("every success body is exactly its schema's encoded form: nothing more, nothing less", () =>
    Effect.gen(function*() {
      const { alice, echo } = yield* seed
      const started = yield* post(
        `/v1/apps/${echo.appId}/executions`,
        alice.key,
        JSON.stringify({ inputs: { prompt: "hi" } })
      )
      const { executionId } = (started.body as { data: { executionId: string } }).data
      const appexec = yield* Appexec.Appexec
      yield* appexec.executions.await(executionId)
      // Decoding drops what the schema does not declare; encoding again must give the body back.
      const roundTrip = <A, I>(schema: Schema.Schema<A, I>, body: unknown) =>
        expect(Schema.encodeSync(schema)(Schema.decodeUnknownSync(schema)(body))).toEqual(body)
      roundTrip(Api.startExecution.successSchema, started.body)
      roundTrip(Api.listApps.successSchema, (yield* get("/v1/apps", alice.key)).body)
      roundTrip(Api.getApp.successSchema, (yield* get(`/v1/apps/${echo.appId}`, alice.key)).body)
      roundTrip(Api.getWorkflow.successSchema, (yield* get(`/v1/apps/${echo.appId}/workflow`, alice.key)).body)
      roundTrip(Api.getExecution.successSchema, (yield* get(`/v1/executions/${executionId}`, alice.key)).body)
      roundTrip(Api.getSigningKey.successSchema, (yield* get("/v1/webhooks/signing-key", alice.key)).body)
    }).pipe(Effect.provide(stack())))

  it.scoped("GET /v1/apps lists workspace apps first, then public apps, for both auth headers", () =>
    Effect.gen(function*() {
      const { alice, bob, echo, secret } = yield* seed
      const viaApiKey = yield* get("/v1/apps", alice.key)
      expect(viaApiKey.status).toBe(200)
      expect(viaApiKey.body).toEqual({
        data: [
          { appId: secret.appId, name: "Private echo", description: "Only for its workspace", isPublic: false },
          { appId: echo.appId, name: "Echo", description: "Repeats the prompt in a style", isPublic: true }
        ]
      })
      const viaBearer = yield* send(
        HttpClientRequest.get("/v1/apps").pipe(HttpClientRequest.setHeader("authorization", `Bearer ${bob.key}`))
      )
      expect(viaBearer.status).toBe(200)
      expect(viaBearer.body).toEqual({
        data: [{ appId: echo.appId, name: "Echo", description: "Repeats the prompt in a style", isPublic: true }]
      })
      const searched = yield* get("/v1/apps?search=PRIVATE&limit=1", alice.key)
      expect((searched.body as { data: Array<{ appId: string }> }).data.map((a) => a.appId)).toEqual([secret.appId])
    }).pipe(Effect.provide(stack())))

  it.scoped("GET /v1/apps searches for the text exactly as sent, repeated slashes included", () =>
    Effect.gen(function*() {
      const { alice } = yield* seed
      const appexec = yield* Appexec.Appexec
      const mirror = yield* appexec.apps.import(
        { ...echoApp, name: "Mirror", description: "Copies https://cdn.example//assets" },
        { owner: { public: true } }
      )
      const found = yield* get("/v1/apps?search=example//assets", alice.key)
      expect((found.body as { data: Array<{ appId: string }> }).data.map((a) => a.appId)).toEqual([mirror.appId])
      const folded = yield* get("/v1/apps?search=example/assets", alice.key)
      expect((folded.body as { data: Array<unknown> }).data).toEqual([])
    }).pipe(Effect.provide(stack())))

  it.scoped("GET /v1/apps answers 400 for a bad limit", () =>
    Effect.gen(function*() {
      const { alice } = yield* seed
      for (const limit of ["0", "101", "abc", "2.5", "0x10", "1e1", "-1", " 5"]) {
        const res = yield* get(`/v1/apps?limit=${limit}`, alice.key)
        expect(res.status).toBe(400)
        expect(errorOf(res.body).code).toBe("invalid_request")
        expect(errorOf(res.body).message).toBe("The request is not valid: 'limit' must be an integer from 1 to 100.")
      }
    }).pipe(Effect.provide(stack())))

  it.scoped("GET /v1/apps/{appId} returns the parameters; 403 for another workspace's app; 404 for unknown or non-UUID ids", () =>
    Effect.gen(function*() {
      const { alice, bob, echo, secret } = yield* seed
      const detail = yield* get(`/v1/apps/${echo.appId}`, bob.key)
      expect(detail.status).toBe(200)
      const data = (detail.body as { data: { appId: string; parameters: Array<Record<string, unknown>> } }).data
      expect(data.appId).toBe(echo.appId)
      expect(data.parameters.map((p) => [p.name, p.type, p.required])).toEqual([
        ["prompt", "text", true],
        ["style", "options", false],
        ["photo", "url", false]
      ])
      expect(data.parameters[1]).toMatchObject({ options: ["plain", "loud"], default: "plain" })
      expect(data.parameters[2]).toMatchObject({ accept: ["image"] })

      expect((yield* get(`/v1/apps/${secret.appId}`, alice.key)).status).toBe(200)
      const denied = yield* get(`/v1/apps/${secret.appId}`, bob.key)
      expect(denied.status).toBe(403)
      expect(errorOf(denied.body).code).toBe("forbidden")

      const missing = yield* get("/v1/apps/00000000-0000-4000-8000-000000000000", alice.key)
      expect(missing.status).toBe(404)
      expect(errorOf(missing.body).code).toBe("not_found")
      const notUuid = yield* get("/v1/apps/not-a-uuid", alice.key)
      expect(notUuid.status).toBe(404)
      expect(errorOf(notUuid.body).code).toBe("not_found")
    }).pipe(Effect.provide(stack())))

  it.scoped("GET /v1/apps/{appId}/workflow returns nodes and edges; 403 and 404 as for the detail", () =>
    Effect.gen(function*() {
      const { alice, bob, echo, secret } = yield* seed
      const graph = yield* get(`/v1/apps/${echo.appId}/workflow`, alice.key)
      expect(graph.status).toBe(200)
      const data = (graph.body as { data: { nodes: Array<unknown>; edges: Array<unknown> } }).data
      expect(data.nodes).toContainEqual({ id: "compose", type: "text.template", label: "Compose" })
      expect(data.edges).toContainEqual({ source: "compose", target: "echo" })
      expect(JSON.stringify(data)).not.toContain("config")
      expect((yield* get(`/v1/apps/${secret.appId}/workflow`, bob.key)).status).toBe(403)
      expect((yield* get("/v1/apps/00000000-0000-4000-8000-000000000000/workflow", bob.key)).status).toBe(404)
    }).pipe(Effect.provide(stack())))

  it.scoped("POST /v1/apps/{appId}/executions answers 202 with placeholders, then GET shows the result", () =>
    Effect.gen(function*() {
      const { alice, echo } = yield* seed
      const webhook = encodeURIComponent("https://hooks.example.com/done?x=1")
      const started = yield* post(
        `/v1/apps/${echo.appId}/executions?webhook=${webhook}`,
        alice.key,
        JSON.stringify({ inputs: { prompt: "hi" } })
      )
      expect(started.status).toBe(202)
      const data =
        (started.body as { data: { executionId: string; status: string; webhookUrl: string; outputs: Array<unknown> } })
          .data
      expect(data.status).toBe("queued")
      expect(data.webhookUrl).toBe("https://hooks.example.com/done?x=1")
      expect(data.outputs).toEqual([{
        id: "echo",
        label: "Echo",
        type: "pending",
        value: null,
        status: "pending",
        error: null
      }])

      const noHook = yield* post(
        `/v1/apps/${echo.appId}/executions`,
        alice.key,
        JSON.stringify({ inputs: { prompt: "yo" } })
      )
      expect((noHook.body as { data: { webhookUrl: unknown } }).data.webhookUrl).toBeNull()

      const appexec = yield* Appexec.Appexec
      yield* appexec.executions.await(data.executionId)
      const polled = yield* get(`/v1/executions/${data.executionId}`, alice.key)
      expect(polled.status).toBe(200)
      const execution = (polled.body as { data: Record<string, unknown> }).data
      expect(execution).toMatchObject({
        executionId: data.executionId,
        status: "completed",
        errorMessage: null,
        outputs: [{ id: "echo", label: "Echo", type: "text", value: "hi (plain)", status: "completed", error: null }]
      })
      expect(execution).not.toHaveProperty("webhookUrl")
      expect(typeof execution.createdAt).toBe("string")
      expect(typeof execution.completedAt).toBe("string")
    }).pipe(Effect.provide(stack())))

  it.scoped("executions are isolated between workspaces in both directions", () =>
    Effect.gen(function*() {
      const { alice, bob, echo } = yield* seed
      const ofAlice = yield* post(
        `/v1/apps/${echo.appId}/executions`,
        alice.key,
        JSON.stringify({ inputs: { prompt: "a" } })
      )
      const ofBob = yield* post(
        `/v1/apps/${echo.appId}/executions`,
        bob.key,
        JSON.stringify({ inputs: { prompt: "b" } })
      )
      const idOf = (r: { body: unknown }) => (r.body as { data: { executionId: string } }).data.executionId
      expect((yield* get(`/v1/executions/${idOf(ofAlice)}`, alice.key)).status).toBe(200)
      expect((yield* get(`/v1/executions/${idOf(ofBob)}`, bob.key)).status).toBe(200)
      const bobReadsAlice = yield* get(`/v1/executions/${idOf(ofAlice)}`, bob.key)
      expect(bobReadsAlice.status).toBe(404)
      expect(errorOf(bobReadsAlice.body).code).toBe("not_found")
      expect((yield* get(`/v1/executions/${idOf(ofBob)}`, alice.key)).status).toBe(404)
      expect((yield* get("/v1/executions/not-a-uuid", alice.key)).status).toBe(404)
    }).pipe(Effect.provide(stack())))

  it.scoped("POST answers 403 for another workspace's private app and 404 for an unknown app", () =>
    Effect.gen(function*() {
      const { bob, secret } = yield* seed
      const denied = yield* post(
        `/v1/apps/${secret.appId}/executions`,
        bob.key,
        JSON.stringify({ inputs: { prompt: "x" } })
      )
      expect(denied.status).toBe(403)
      expect(errorOf(denied.body).code).toBe("forbidden")
      const missing = yield* post(
        "/v1/apps/00000000-0000-4000-8000-000000000000/executions",
        bob.key,
        JSON.stringify({ inputs: {} })
      )
      expect(missing.status).toBe(404)
    }).pipe(Effect.provide(stack())))

  it.scoped("POST answers 400 for every malformed body, never 500", () =>
    Effect.gen(function*() {
      const { alice, echo } = yield* seed
      const path = `/v1/apps/${echo.appId}/executions`
      const cases: Array<[string, string | undefined, string]> = [
        ["{not json", undefined, "not valid JSON"],
        ["", undefined, "empty"],
        ["[]", undefined, "JSON object"],
        ["{}", undefined, "no 'inputs'"],
        [JSON.stringify({ inputs: "prompt=hi" }), undefined, "'inputs' must be an object"],
        [JSON.stringify({ inputs: ["hi"] }), undefined, "'inputs' must be an object"],
        [JSON.stringify({ inputs: null }), undefined, "'inputs' must be an object"],
        ["inputs=1", "application/x-www-form-urlencoded", "Content-Type: application/json"],
        [JSON.stringify({ inputs: { prompt: "hi" } }), "text/plain", "Content-Type: application/json"]
      ]
      for (const [body, contentType, expected] of cases) {
        const res = yield* post(path, alice.key, body, contentType)
        expect(res.status, body).toBe(400)
        expect(errorOf(res.body).code).toBe("invalid_request")
        expect(errorOf(res.body).message).toContain(expected)
      }
    }).pipe(Effect.provide(stack())))

  it.scoped("POST answers 400 invalid_inputs with one detail per problem", () =>
    Effect.gen(function*() {
      const { alice, echo } = yield* seed
      const res = yield* post(
        `/v1/apps/${echo.appId}/executions`,
        alice.key,
        JSON.stringify({ inputs: { Prompt: "hi", style: "quiet", photo: "ftp://x" } })
      )
      expect(res.status).toBe(400)
      const error = errorOf(res.body)
      expect(error.code).toBe("invalid_inputs")
      expect(error.details).toEqual(
        expect.arrayContaining([
          expect.objectContaining({ parameter: "Prompt", problem: "unknown_parameter" }),
          expect.objectContaining({ parameter: "style", problem: "not_an_option", expected: ["plain", "loud"] }),
          expect.objectContaining({ parameter: "prompt", problem: "missing_required" }),
          expect.objectContaining({ parameter: "photo", problem: "invalid_url" })
        ])
      )
    }).pipe(Effect.provide(stack())))

  it.scoped("POST answers 400 invalid_webhook_url for a webhook that is not an http(s) URL", () =>
    Effect.gen(function*() {
      const { alice, echo } = yield* seed
      for (const webhook of ["ftp://example.com/hook", "not a url", "/relative"]) {
        const res = yield* post(
          `/v1/apps/${echo.appId}/executions?webhook=${encodeURIComponent(webhook)}`,
          alice.key,
          JSON.stringify({ inputs: { prompt: "hi" } })
        )
        expect(res.status).toBe(400)
        expect(errorOf(res.body).code).toBe("invalid_webhook_url")
      }
    }).pipe(Effect.provide(stack())))

  it.scoped("POST keeps the webhook URL exactly as sent, encoded or not", () =>
    Effect.gen(function*() {
      const { alice, echo } = yield* seed
      const webhook = "https://hooks.example/a//b?x=1"
      for (const query of [encodeURIComponent(webhook), "https://hooks.example/a//b"]) {
        const res = yield* post(
          `/v1/apps/${echo.appId}/executions?webhook=${query}`,
          alice.key,
          JSON.stringify({ inputs: { prompt: "hi" } })
        )
        expect(res.status).toBe(202)
        expect((res.body as { data: { webhookUrl: string } }).data.webhookUrl).toBe(decodeURIComponent(query))
      }
    }).pipe(Effect.provide(stack())))

  it.scoped("POST answers 413 for a body over the limit, declared or streamed", () =>
    Effect.gen(function*() {
      const { alice, echo } = yield* seed
      const big = JSON.stringify({ inputs: { prompt: "x".repeat(1024 * 1024) } })
      const res = yield* post(`/v1/apps/${echo.appId}/executions`, alice.key, big)
      expect(res.status).toBe(413)
      expect(errorOf(res.body).code).toBe("payload_too_large")
      const chunked = yield* send(
        HttpClientRequest.post(`/v1/apps/${echo.appId}/executions`).pipe(
          HttpClientRequest.setHeader("x-api-key", alice.key),
          // a stream has no Content-Length: the bound is enforced while reading
          HttpClientRequest.bodyStream(streamOf(big), { contentType: "application/json" })
        )
      )
      expect(chunked.status).toBe(413)
    }).pipe(Effect.provide(stack())))

  it.scoped("GET /v1/webhooks/signing-key returns the key set, not wrapped in data", () =>
    Effect.gen(function*() {
      const { bob } = yield* seed
      const res = yield* get("/v1/webhooks/signing-key", bob.key)
      expect(res.status).toBe(200)
      expect(res.body).toEqual({ keys: [testJwk] })
    }).pipe(Effect.provide(stack())))
})

const streamOf = (text: string) => {
  const bytes = new TextEncoder().encode(text)
  const size = 64 * 1024
  return Stream.fromChunk(
    Chunk.fromIterable(
      Array.from({ length: Math.ceil(bytes.length / size) }, (_, i) => bytes.subarray(i * size, (i + 1) * size))
    )
  )
}
