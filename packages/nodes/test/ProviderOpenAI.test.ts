/**
 * `provider.openai` against a local server that speaks OpenAI's chat and image routes
 * (`TestOpenAiServer`, a real socket on 127.0.0.1): the request as OpenAI's reference writes it,
 * the text and image outputs, retries after 429 (as long as `Retry-After` says, on the test
 * clock), 503 and a timeout, no retry of a 500, a 401 mapped to a message naming the secret, the
 * workspace's secret over the instance's, and the token in no log line or answer.
 */
import type { Ids } from "@appexec/api"
import { Appexec } from "@appexec/core"
import { TestHarness, TestOpenAiServer } from "@appexec/testing"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Fiber, TestClock } from "effect"
import { describeImage, testImage } from "./support/Images.js"
import { download } from "./support/Instance.js"
import { capturing, finish, instance, logOf, run, setSecret, sleepPending, start } from "./support/ProviderRuns.js"

const TOKEN = "sk-test-4f9c2a7e1b"

const chatApp = (baseUrl: string, config: Record<string, unknown> = {}) => ({
  name: "Chat",
  nodes: [
    { id: "prompt", type: "input.text", config: { name: "prompt", required: true } },
    { id: "model", type: "input.text", config: { name: "model", default: "gpt-4o-mini" } },
    {
      id: "chat",
      type: "provider.openai",
      config: {
        mode: "chat",
        baseUrl,
        model: "{{model}}",
        messages: [
          { role: "system", content: "You answer in one sentence." },
          { role: "user", content: "{{prompt}}" }
        ],
        temperature: 0.2,
        maxTokens: 64,
        ...config
      }
    },
    { id: "answer", type: "output.text", label: "Answer" }
  ],
  edges: [
    { source: "prompt", target: "chat" },
    { source: "model", target: "chat" },
    { source: "chat", target: "answer" }
  ]
})

const imageApp = (baseUrl: string, config: Record<string, unknown> = {}) => ({
  name: "Picture",
  nodes: [
    { id: "prompt", type: "input.text", config: { name: "prompt", required: true } },
    {
      id: "draw",
      type: "provider.openai",
      config: {
        mode: "image",
        baseUrl,
        model: "gpt-image-1",
        prompt: "{{prompt}}, watercolour",
        size: "1024x1024",
        ...config
      }
    },
    { id: "picture", type: "output.image", label: "Picture" }
  ],
  edges: [
    { source: "prompt", target: "draw" },
    { source: "draw", target: "picture" }
  ]
})

/** Sets the instance's secret `OPENAI_API_KEY` (or another) through the instance's store. */
const setToken = (value: string, name = "OPENAI_API_KEY", workspaceId?: Ids.WorkspaceId) =>
  setSecret(name, value, workspaceId)

describe("provider.openai", () => {
  it.scoped("chat: sends OpenAI's request with the token and the filled messages, yields the answer's text", () =>
    Effect.gen(function*() {
      yield* setToken(TOKEN)
      const server = yield* TestOpenAiServer.start({ token: TOKEN, image: yield* testImage(8, 8) })
      const done = yield* run(chatApp(server.baseUrl), { prompt: "Why is the sea \"blue\"?", model: "llama3.2" })
      expect(done.errorMessage).toBeNull()
      expect(done.outputs[0]).toMatchObject({
        type: "text",
        status: "completed",
        value: "You said: Why is the sea \"blue\"?"
      })
      const request = server.received[0]!
      expect([request.method, request.path]).toEqual(["POST", "/v1/chat/completions"])
      expect(request.headers["authorization"]).toBe(`Bearer ${TOKEN}`)
      expect(request.headers["content-type"]).toBe("application/json")
      expect(request.json).toEqual({
        model: "llama3.2",
        messages: [
          { role: "system", content: "You answer in one sentence." },
          { role: "user", content: "Why is the sea \"blue\"?" }
        ],
        temperature: 0.2,
        max_tokens: 64
      })
      const lines = yield* logOf(done.executionId)
      expect(lines[0]).toBe(`info: POST ${new URL(server.baseUrl).host} (chat completion, model llama3.2)`)
      expect(lines[1]).toMatch(/^info: POST 127\.0\.0\.1:\d+: 200 OK in \d+ ms, \d+/)
    }).pipe(Effect.provide(instance())))

  it.scoped("image: b64_json becomes the image output, stored and served as a signed media URL", () =>
    Effect.gen(function*() {
      yield* setToken(TOKEN)
      const png = yield* testImage(96, 64)
      const server = yield* TestOpenAiServer.start({ token: TOKEN, image: png })
      const done = yield* run(imageApp(server.baseUrl), { prompt: "a lighthouse at dusk" })
      expect(done.errorMessage).toBeNull()
      expect(done.outputs[0]).toMatchObject({ type: "image", status: "completed" })
      const blob = yield* download(done.outputs[0]!.value!)
      expect(blob.contentType).toBe("image/png")
      expect(Buffer.from(blob.bytes).equals(Buffer.from(png))).toBe(true)
      expect(yield* describeImage(blob.bytes)).toEqual({ width: 96, height: 64, format: "png" })
      expect(server.received[0]!.path).toBe("/v1/images/generations")
      expect(server.received[0]!.json).toEqual({
        model: "gpt-image-1",
        prompt: "a lighthouse at dusk, watercolour",
        n: 1,
        size: "1024x1024"
      })
    }).pipe(Effect.provide(instance())))

  it.scoped("image: a url answer (response_format url) is fetched through the guarded client and stored", () =>
    Effect.gen(function*() {
      yield* setToken(TOKEN)
      const png = yield* testImage(40, 30)
      const server = yield* TestOpenAiServer.start({ token: TOKEN, image: png })
      const done = yield* run(imageApp(server.baseUrl, { model: "dall-e-3", responseFormat: "url" }), { prompt: "x" })
      expect(done.errorMessage).toBeNull()
      expect(server.received.map((r) => `${r.method} ${r.path}`)).toEqual([
        "POST /v1/images/generations",
        "GET /files/0.png"
      ])
      expect((server.received[0]!.json as { response_format: string }).response_format).toBe("url")
      const blob = yield* download(done.outputs[0]!.value!)
      expect(yield* describeImage(blob.bytes)).toEqual({ width: 40, height: 30, format: "png" })
    }).pipe(Effect.provide(instance())))

  it.scoped("a 429 waits exactly as long as Retry-After says, then the retry completes; the log says so", () =>
    Effect.gen(function*() {
      yield* setToken(TOKEN)
      const server = yield* TestOpenAiServer.start({ token: TOKEN, image: yield* testImage(8, 8) })
      server.script("chat", {
        status: 429,
        headers: { "retry-after": "7" },
        body: { error: { message: "Rate limit reached", type: "requests", param: null, code: "rate_limit_exceeded" } }
      })
      const { executionId } = yield* start(chatApp(server.baseUrl), { prompt: "hello" })
      const waiting = yield* Effect.fork(finish(executionId))
      yield* server.next
      yield* sleepPending(7000)
      yield* TestClock.adjust("6999 millis")
      expect(server.received).toHaveLength(1)
      yield* TestClock.adjust("1 millis")
      const done = yield* Fiber.join(waiting)
      expect(done.outputs[0]).toMatchObject({ status: "completed", value: "You said: hello" })
      expect(server.received.map((r) => r.answer)).toEqual([429, 200])
      const lines = yield* logOf(executionId)
      expect(lines).toContain(`warn: POST ${new URL(server.baseUrl).host} answered 429; retry 1 of 4 in 7s`)
    }).pipe(Effect.provide(instance())))

  it.scoped("a 503 is retried with backoff; a 500 is not retried and fails with its status", () =>
    Effect.gen(function*() {
      yield* setToken(TOKEN)
      const server = yield* TestOpenAiServer.start({ token: TOKEN, image: yield* testImage(8, 8) })
      server.script("chat", { status: 503, body: { error: { message: "overloaded", type: "server_error" } } }, {
        status: 500,
        body: {
          error: { message: `The server had an error\n for ${TOKEN}`, type: "server_error", param: null, code: null }
        }
      })
      const { executionId } = yield* start(chatApp(server.baseUrl), { prompt: "hello" })
      const waiting = yield* Effect.fork(finish(executionId))
      yield* server.next
      // The first retry waits between half and all of 1 s: 750 ms with the fixed random number.
      yield* sleepPending(750)
      yield* TestClock.adjust("750 millis")
      const done = yield* Fiber.join(waiting)
      expect(server.received.map((r) => r.answer)).toEqual([503, 500])
      expect(done.status).toBe("failed")
      expect(done.errorMessage).toBe(
        "node 'chat' (provider.openai) failed: the provider answered 500 Internal Server Error: The server had an error for [secret]"
      )
    }).pipe(Effect.provide(instance())))

  it.scoped("a request that does not answer in timeoutMs is abandoned, not sent again: it may have made a generation", () =>
    Effect.gen(function*() {
      yield* setToken(TOKEN)
      const server = yield* TestOpenAiServer.start({ token: TOKEN, image: yield* testImage(8, 8) })
      server.script("chat", "hold")
      const { executionId } = yield* start(chatApp(server.baseUrl, { timeoutMs: 5000 }), { prompt: "slow" })
      const waiting = yield* Effect.fork(finish(executionId))
      yield* server.next
      expect(server.held()).toBe(1)
      yield* sleepPending(5000)
      yield* TestClock.adjust("5 seconds")
      const done = yield* Fiber.join(waiting)
      expect(done.status).toBe("failed")
      expect(done.errorMessage).toBe("node 'chat' (provider.openai) failed: the endpoint did not answer within 5 s")
      expect(server.received).toHaveLength(1)
      expect(yield* logOf(executionId)).toContain(
        `warn: POST ${
          new URL(server.baseUrl).host
        } did not answer within 5s; not retried: the provider may have taken it, and a repeat could start a second job`
      )
    }).pipe(Effect.provide(instance())))

  it.scoped("a request whose connection breaks is not sent again", () =>
    Effect.gen(function*() {
      yield* setToken(TOKEN)
      const server = yield* TestOpenAiServer.start({ token: TOKEN, image: yield* testImage(8, 8) })
      server.script("images", "reset")
      const done = yield* run(imageApp(server.baseUrl), { prompt: "a lighthouse" })
      expect(done.errorMessage).toBe("node 'draw' (provider.openai) failed: the request failed: the connection failed")
      expect(server.received).toHaveLength(1)
    }).pipe(Effect.provide(instance())))

  it.scoped("a 401 fails with a message naming the secret; the token it echoes is in no log line or answer", () => {
    const logged: Array<string> = []
    return Effect.gen(function*() {
      yield* setToken("sk-wrong-9d1e77")
      const server = yield* TestOpenAiServer.start({ token: TOKEN, image: yield* testImage(8, 8) })
      const done = yield* run(chatApp(server.baseUrl), { prompt: "hello" })
      expect(server.received).toHaveLength(1)
      expect(done.status).toBe("failed")
      expect(done.errorMessage).toBe(
        "node 'chat' (provider.openai) failed: the provider refused the token (401 Unauthorized) (code: invalid_api_key): " +
          "check the secret OPENAI_API_KEY (appexec secrets set OPENAI_API_KEY)"
      )
      const lines = yield* logOf(done.executionId)
      expect(logged.some((line) => line.includes("Incorrect API key provided: [secret]"))).toBe(true)
      const everything = JSON.stringify([done, lines, logged])
      expect(everything).not.toContain("sk-wrong-9d1e77")
      expect(everything).not.toContain(TOKEN)
    }).pipe(Effect.provide(capturing(logged)))
  })

  it.scoped("a secret that is not set fails the node, naming it, without a request; secret: null sends none", () =>
    Effect.gen(function*() {
      const server = yield* TestOpenAiServer.start({ image: yield* testImage(8, 8) })
      const missing = yield* run(chatApp(server.baseUrl), { prompt: "hello" })
      expect(missing.errorMessage).toBe(
        "node 'chat' (provider.openai) failed: The secret OPENAI_API_KEY is not set (an operator sets it with: appexec secrets set OPENAI_API_KEY)."
      )
      expect(server.received).toHaveLength(0)
      const local = yield* run(chatApp(server.baseUrl, { secret: null }), { prompt: "hello" })
      expect(local.outputs[0]).toMatchObject({ status: "completed", value: "You said: hello" })
      expect(server.received[0]!.headers["authorization"]).toBeUndefined()
    }).pipe(Effect.provide(instance())))

  it.scoped("a workspace's secret overrides the instance's", () =>
    Effect.gen(function*() {
      const server = yield* TestOpenAiServer.start({ image: yield* testImage(8, 8) })
      yield* setToken("sk-instance")
      const acme = yield* TestHarness.signIn("acme")
      yield* setToken("sk-acme", "OPENAI_API_KEY", acme.workspaceId)
      yield* run(chatApp(server.baseUrl), { prompt: "a" }, "acme")
      yield* run(chatApp(server.baseUrl), { prompt: "b" }, "other")
      expect(server.received.map((r) => r.headers["authorization"])).toEqual(["Bearer sk-acme", "Bearer sk-instance"])
    }).pipe(Effect.provide(instance())))

  it.scoped("a config that cannot work is refused at import, every problem named", () =>
    Effect.gen(function*() {
      const appexec = yield* Appexec.Appexec
      const bad = chatApp("http://127.0.0.1:1/v1?key=x", {
        messages: [{ role: "user", content: "{{nobody}}" }],
        prompt: "a picture",
        maxCompletionTokens: 10
      })
      const error = yield* appexec.apps.import(bad).pipe(Effect.flip)
      expect(error._tag).toBe("InvalidAppDefinition")
      for (
        const problem of [
          "node 'chat': placeholder {{nobody}} does not name an upstream node",
          "node 'chat': baseUrl takes no query or fragment",
          "node 'chat': prompt is for mode image",
          "node 'chat': give maxTokens or maxCompletionTokens, not both"
        ]
      ) expect(error.message).toContain(problem)
      const noPrompt = yield* appexec.apps.import(imageApp("https://api.openai.com/v1", { prompt: " " })).pipe(
        Effect.flip
      )
      expect(noPrompt.message).toContain("mode image needs a prompt")
    }).pipe(Effect.provide(instance())))
})
