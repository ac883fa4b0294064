/**
 * `provider.replicate` against a local server that speaks Replicate's predictions API
 * (`TestReplicateServer`, a real socket on 127.0.0.1), under `TestClock`: the create request as
 * Replicate's reference writes it (with `Prefer: wait`), an answer finished at once, polling at
 * `urls.get`, a failed prediction's error, a 429 retried after its `Retry-After`, a cancel that
 * reaches the server when the execution is canceled or the node's time runs out, text from a
 * list of tokens, and the token in no log line or answer.
 */
import { Appexec } from "@appexec/core"
import { TestReplicateServer } from "@appexec/testing"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Fiber, Layer, Random, TestClock } from "effect"
import { describeImage, testImage } from "./support/Images.js"
import { download, layer } from "./support/Instance.js"
import { capturing, finish, instance, logOf, pass, run, setSecret, start } from "./support/ProviderRuns.js"

const TOKEN = "r8_test_7c1f0e9a2b"

const app = (baseUrl: string, config: Record<string, unknown> = {}, output = "output.image") => ({
  name: "Replicate",
  nodes: [
    { id: "prompt", type: "input.text", config: { name: "prompt", required: true } },
    {
      id: "model",
      type: "provider.replicate",
      config: {
        model: "black-forest-labs/flux-schnell",
        input: { prompt: "{{prompt}}", num_outputs: 1, aspect_ratio: "1:1" },
        baseUrl,
        ...config
      }
    },
    { id: "result", type: output, label: "Result" }
  ],
  edges: [{ source: "prompt", target: "model" }, { source: "model", target: "result" }]
})

const setToken = (value: string, name = "REPLICATE_API_TOKEN") => setSecret(name, value)

describe("provider.replicate", () => {
  it.scoped("creates the prediction with Prefer: wait; an answer finished at once is the output, fetched and stored", () =>
    Effect.gen(function*() {
      yield* setToken(TOKEN)
      const png = yield* testImage(48, 32)
      const server = yield* TestReplicateServer.start({ token: TOKEN, steps: 0, image: png })
      const { executionId } = yield* start(app(server.baseUrl), { prompt: "a lighthouse at dusk" })
      const done = yield* finish(executionId)
      expect(done.errorMessage).toBeNull()
      const create = server.received[0]!
      expect([create.method, create.path]).toEqual(["POST", "/v1/models/black-forest-labs/flux-schnell/predictions"])
      expect(create.headers["authorization"]).toBe(`Bearer ${TOKEN}`)
      expect(create.headers["prefer"]).toBe("wait=30")
      expect(create.headers["content-type"]).toBe("application/json")
      expect(create.json).toEqual({ input: { prompt: "a lighthouse at dusk", num_outputs: 1, aspect_ratio: "1:1" } })
      // No status request: the create answer was already succeeded; then the file.
      expect(server.received.map((r) => `${r.method} ${r.path}`)).toEqual([
        "POST /v1/models/black-forest-labs/flux-schnell/predictions",
        "GET /files/0"
      ])
      expect(server.received[1]!.headers["authorization"]).toBeUndefined()
      const blob = yield* download(done.outputs[0]!.value!)
      expect(yield* describeImage(blob.bytes)).toEqual({ width: 48, height: 32, format: "png" })
      const lines = yield* logOf(executionId)
      expect(lines).toContain(`info: POST ${server.host}: submitting the prediction`)
      expect(lines).toContain("info: prediction succeeded")
      expect(JSON.stringify([lines, done])).not.toContain(TOKEN)
    }).pipe(Effect.provide(instance())))

  it.scoped("a running prediction is polled at urls.get with growing waits until it succeeds", () =>
    Effect.gen(function*() {
      yield* setToken(TOKEN)
      const server = yield* TestReplicateServer.start({ token: TOKEN, steps: 3, image: yield* testImage(8, 8) })
      const { executionId } = yield* start(app(server.baseUrl), { prompt: "x" })
      const waiting = yield* Effect.fork(finish(executionId))
      yield* server.next
      yield* pass(1000)
      yield* server.next
      yield* pass(1500)
      yield* server.next
      yield* pass(2250)
      const done = yield* Fiber.join(waiting)
      expect(done.errorMessage).toBeNull()
      expect(server.received.map((r) => `${r.method} ${r.path}`)).toEqual([
        "POST /v1/models/black-forest-labs/flux-schnell/predictions",
        "GET /v1/predictions/pred0001",
        "GET /v1/predictions/pred0001",
        "GET /v1/predictions/pred0001",
        "GET /files/0"
      ])
      expect(server.received[1]!.headers["authorization"]).toBe(`Bearer ${TOKEN}`)
      const lines = yield* logOf(executionId)
      expect(lines.filter((l) => /^info: prediction (starting|processing|succeeded)$/.test(l))).toEqual([
        "info: prediction starting",
        "info: prediction processing",
        "info: prediction succeeded"
      ])
      expect(server.canceled).toEqual([])
    }).pipe(Effect.provide(instance())))

  it.scoped("an output inlined as a data: URL (sync mode) is decoded and stored without a request", () =>
    Effect.gen(function*() {
      yield* setToken(TOKEN)
      const png = yield* testImage(16, 10)
      const server = yield* TestReplicateServer.start({
        token: TOKEN,
        steps: 0,
        model: () => ({ output: [`data:image/png;base64,${Buffer.from(png).toString("base64")}`] })
      })
      const done = yield* run(app(server.baseUrl), { prompt: "x" })
      expect(done.errorMessage).toBeNull()
      expect(server.received).toHaveLength(1)
      const blob = yield* download(done.outputs[0]!.value!)
      expect(Buffer.from(blob.bytes).equals(Buffer.from(png))).toBe(true)
      const svg = yield* TestReplicateServer.start({
        token: TOKEN,
        steps: 0,
        model: () => ({ output: "data:image/svg+xml;base64,PHN2Zy8+" })
      })
      const refused = yield* run(app(svg.baseUrl), { prompt: "x" })
      expect(refused.errorMessage).toBe(
        "node 'model' (provider.replicate) failed: the result is not media: a data: URL of image/svg+xml"
      )
    }).pipe(Effect.provide(instance())))

  it.scoped("a version runs through /v1/predictions; a language model's tokens are joined into text", () =>
    Effect.gen(function*() {
      yield* setToken(TOKEN)
      const server = yield* TestReplicateServer.start({
        token: TOKEN,
        steps: 0,
        model: () => ({ output: ["The ", "sea ", "is ", "blue."] })
      })
      const version = "meta/llama:" + "a".repeat(64)
      const done = yield* finish(
        (yield* start(app(server.baseUrl, { model: undefined, version, output: "text" }, "output.text"), {
          prompt: "why"
        })).executionId
      )
      expect(done.outputs[0]).toMatchObject({ type: "text", status: "completed", value: "The sea is blue." })
      expect(server.received[0]!.path).toBe("/v1/predictions")
      expect(server.received[0]!.json).toEqual({
        version: "a".repeat(64),
        input: { prompt: "why", num_outputs: 1, aspect_ratio: "1:1" }
      })
    }).pipe(Effect.provide(instance())))

  it.scoped("a failed prediction fails the node with the prediction's error", () =>
    Effect.gen(function*() {
      yield* setToken(TOKEN)
      const server = yield* TestReplicateServer.start({
        token: TOKEN,
        steps: 1,
        model: () => ({ error: "CUDA out of memory.\n  Tried to allocate 2 GiB" })
      })
      const { executionId } = yield* start(app(server.baseUrl), { prompt: "x" })
      const waiting = yield* Effect.fork(finish(executionId))
      yield* server.next
      yield* pass(1000)
      const done = yield* Fiber.join(waiting)
      expect(done.status).toBe("failed")
      expect(done.errorMessage).toBe(
        "node 'model' (provider.replicate) failed: the prediction failed (status failed): " +
          "CUDA out of memory. Tried to allocate 2 GiB"
      )
      expect(server.canceled).toEqual([])
    }).pipe(Effect.provide(instance())))

  it.scoped("a 429 on create waits for its Retry-After, and a 503 on a poll is retried; each retry is logged", () =>
    Effect.gen(function*() {
      yield* setToken(TOKEN)
      const server = yield* TestReplicateServer.start({ token: TOKEN, steps: 1, image: yield* testImage(8, 8) })
      server.script({
        status: 429,
        headers: { "retry-after": "3" },
        body: { title: "Request was throttled", detail: "Request was throttled. Expected available in 3 seconds." }
      })
      const { executionId } = yield* start(app(server.baseUrl), { prompt: "x" })
      const waiting = yield* Effect.fork(finish(executionId))
      yield* server.next
      yield* pass(3000)
      yield* server.next
      server.script({ status: 503, body: { detail: "busy" } })
      yield* pass(1000)
      yield* server.next
      yield* pass(750)
      const done = yield* Fiber.join(waiting)
      expect(done.errorMessage).toBeNull()
      const lines = yield* logOf(executionId)
      expect(lines).toContain(`warn: POST ${server.host} answered 429; retry 1 of 4 in 3s`)
      expect(lines).toContain(`warn: GET ${server.host} answered 503; retry 1 of 4 in 750ms`)
    }).pipe(Effect.provide(instance())))

  it.scoped("a create that breaks off or answers 502 is not sent again (the prediction may exist); a 503 is", () =>
    Effect.gen(function*() {
      yield* setToken(TOKEN)
      const broken = yield* TestReplicateServer.start({ token: TOKEN, steps: 1 })
      broken.script("reset")
      const reset = yield* run(app(broken.baseUrl), { prompt: "x" })
      expect(reset.errorMessage).toBe(
        "node 'model' (provider.replicate) failed: the request failed: the connection failed"
      )
      expect(broken.received).toHaveLength(1)
      expect(yield* logOf(reset.executionId)).toContain(
        `warn: POST ${broken.host} failed: the connection failed; not retried: the provider may have taken it, and a repeat could start a second job`
      )

      const server = yield* TestReplicateServer.start({ token: TOKEN, steps: 1, image: yield* testImage(8, 8) })
      server.script({ status: 502, body: { detail: "bad gateway" } })
      const gateway = yield* run(app(server.baseUrl), { prompt: "x" })
      expect(gateway.errorMessage).toMatch(
        /^node 'model' \(provider\.replicate\) failed: the provider answered 502 Bad Gateway/
      )
      expect(server.received).toHaveLength(1)

      server.script({ status: 503, body: { detail: "busy" } })
      const { executionId } = yield* start(app(server.baseUrl), { prompt: "x" })
      const waiting = yield* Effect.fork(finish(executionId))
      yield* server.next
      yield* pass(750)
      yield* server.next
      yield* pass(1000)
      const done = yield* Fiber.join(waiting)
      expect(done.errorMessage).toBeNull()
      expect(server.received.filter((r) => r.method === "POST")).toHaveLength(3)
      expect(yield* logOf(executionId)).toContain(`warn: POST ${server.host} answered 503; retry 1 of 4 in 750ms`)
    }).pipe(Effect.provide(instance())))

  it.scoped("canceling the execution sends the prediction's cancel request", () =>
    Effect.gen(function*() {
      yield* setToken(TOKEN)
      const server = yield* TestReplicateServer.start({ token: TOKEN, steps: 100 })
      const { executionId, principal } = yield* start(app(server.baseUrl), { prompt: "x" })
      const waiting = yield* Effect.fork(finish(executionId))
      yield* server.next
      yield* pass(1000)
      yield* server.next
      const appexec = yield* Appexec.Appexec
      yield* appexec.executions.cancel(executionId, principal)
      // The worker looks for cancels once a second.
      yield* TestClock.adjust("1 second")
      const done = yield* Fiber.join(waiting)
      expect(done.status).toBe("failed")
      expect(done.errorMessage).toBe("The execution was canceled.")
      expect(server.canceled).toEqual(["pred0001"])
      const cancel = server.received.at(-1)!
      expect([cancel.method, cancel.path]).toEqual(["POST", "/v1/predictions/pred0001/cancel"])
      expect(cancel.headers["authorization"]).toBe(`Bearer ${TOKEN}`)
      expect(server.predictions.get("pred0001")!.status).toBe("canceled")
    }).pipe(Effect.provide(instance())))

  it.scoped("canceled while the create is held open (Prefer: wait), the prediction is canceled once its answer comes", () =>
    Effect.gen(function*() {
      yield* setToken(TOKEN)
      const server = yield* TestReplicateServer.start({ token: TOKEN, steps: 100 })
      server.script("hold")
      const { executionId, principal } = yield* start(app(server.baseUrl), { prompt: "x" })
      const waiting = yield* Effect.fork(finish(executionId))
      yield* server.next
      yield* (yield* Appexec.Appexec).executions.cancel(executionId, principal)
      yield* TestClock.adjust("1 second")
      const done = yield* Fiber.join(waiting)
      expect(done.errorMessage).toBe("The execution was canceled.")
      expect(server.canceled).toEqual([])
      // The create answers late: the prediction it made is canceled at once.
      yield* server.release
      const cancel = yield* server.next
      expect([cancel.method, cancel.path]).toEqual(["POST", "/v1/predictions/pred0001/cancel"])
      expect(server.predictions.get("pred0001")!.status).toBe("canceled")
    }).pipe(Effect.provide(instance())))

  it.scoped("a prediction that outlasts timeoutMs is canceled and fails the node", () =>
    Effect.gen(function*() {
      yield* setToken(TOKEN)
      const server = yield* TestReplicateServer.start({ token: TOKEN, steps: 100 })
      const { executionId } = yield* start(app(server.baseUrl, { timeoutMs: 3000 }), { prompt: "x" })
      const waiting = yield* Effect.fork(finish(executionId))
      yield* server.next
      yield* pass(1000)
      yield* server.next
      yield* pass(1500)
      yield* server.next
      yield* TestClock.adjust("1 second")
      const done = yield* Fiber.join(waiting)
      expect(done.errorMessage).toBe(
        "node 'model' (provider.replicate) failed: the prediction did not finish within 3s; it was canceled"
      )
      expect(server.canceled).toEqual(["pred0001"])
      expect(yield* logOf(executionId)).toContain(`info: POST ${server.host}: canceling the prediction: 200 OK`)
    }).pipe(Effect.provide(instance())))

  it.scoped("a refused token fails with its status and the provider's detail, the echoed token masked everywhere", () => {
    const logged: Array<string> = []
    return Effect.gen(function*() {
      yield* setToken("r8_wrong_5e2d")
      const server = yield* TestReplicateServer.start({ token: TOKEN })
      const done = yield* run(app(server.baseUrl), { prompt: "x" })
      expect(done.errorMessage).toBe(
        "node 'model' (provider.replicate) failed: the provider answered 401 Unauthorized (check the secret " +
          "REPLICATE_API_TOKEN: appexec secrets set REPLICATE_API_TOKEN): " +
          "You did not pass a valid authentication token (got 'Bearer [secret]')"
      )
      expect(JSON.stringify(yield* logOf(done.executionId))).not.toContain("r8_wrong_5e2d")
      // The operator's log has the answer's start, the token masked.
      expect(logged.some((line) => line.includes("401 Unauthorized") && line.includes("Bearer [secret]"))).toBe(true)
      expect(logged.join("\n")).not.toContain("r8_wrong_5e2d")
    }).pipe(Effect.provide(capturing(logged)))
  })

  it.scoped("a missing secret fails the node naming it, without a request", () =>
    Effect.gen(function*() {
      const server = yield* TestReplicateServer.start({ token: TOKEN })
      const done = yield* run(app(server.baseUrl), { prompt: "x" })
      expect(done.errorMessage).toBe(
        "node 'model' (provider.replicate) failed: The secret REPLICATE_API_TOKEN is not set " +
          "(an operator sets it with: appexec secrets set REPLICATE_API_TOKEN)."
      )
      expect(server.received).toHaveLength(0)
    }).pipe(Effect.provide(instance())))

  it.scoped("a status URL on another origin is not called with the token", () =>
    Effect.gen(function*() {
      yield* setToken(TOKEN)
      const server = yield* TestReplicateServer.start({ token: TOKEN })
      server.script({
        status: 201,
        body: { id: "p1", status: "starting", urls: { get: "http://127.0.0.2:9/v1/predictions/p1", cancel: "x" } }
      })
      const { executionId } = yield* start(app(server.baseUrl), { prompt: "x" })
      const done = yield* finish(executionId)
      expect(done.errorMessage).toBe(
        "node 'model' (provider.replicate) failed: the provider's status URL is not on the submit URL's origin, so it is not called"
      )
      expect(server.received).toHaveLength(1)
    }).pipe(Effect.provide(instance())))

  it.scoped("a base URL on a private address is refused unless private networks are allowed", () =>
    Effect.gen(function*() {
      yield* setToken(TOKEN)
      const server = yield* TestReplicateServer.start({ token: TOKEN })
      const done = yield* run(app(server.baseUrl), { prompt: "x" })
      expect(done.errorMessage).toContain(
        "node 'model' (provider.replicate) failed: the request was refused: its host 127.0.0.1 is a loopback address"
      )
      expect(server.received).toHaveLength(0)
    }).pipe(
      Effect.provide(
        layer({ outbound: { allowPrivateNetworks: false } }).pipe(Layer.provide(Layer.setRandom(Random.fixed([0.5]))))
      )
    ))

  it.scoped("refuses at import: neither model nor version, a bad model, a bad base URL, an unknown placeholder", () =>
    Effect.gen(function*() {
      const appexec = yield* Appexec.Appexec
      const error = yield* appexec.apps.import({
        public: true,
        ...app("ftp://example.com", { model: undefined, input: { prompt: "{{nobody}}" } })
      }).pipe(Effect.flip)
      expect(error.message).toContain("give model or version (one)")
      expect(error.message).toContain("baseUrl must be an absolute http or https URL")
      expect(error.message).toContain("placeholder {{nobody}} does not name an upstream node")
      const bad = yield* appexec.apps.import({ public: true, ...app("https://x.test", { model: "no slash" }) }).pipe(
        Effect.flip
      )
      expect(bad.message).toContain("a model as owner/name")
    }).pipe(Effect.provide(instance())))
})
