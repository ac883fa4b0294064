/**
 * `provider.fal` and `http.job` against a local server that speaks fal's queue
 * (`TestFalServer`, a real socket on 127.0.0.1), under `TestClock`: submit, status until
 * `COMPLETED`, the result at `response_url`, a kept error answer shown by its `detail` and not
 * retried, a cancel (`PUT cancel_url`) that reaches the server when the execution is canceled,
 * `http.job` written for the same queue, and its import-time checks.
 */
import { Appexec } from "@appexec/core"
import { TestFalServer } from "@appexec/testing"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Fiber, TestClock } from "effect"
import { readFileSync } from "node:fs"
import { describeImage, testImage } from "./support/Images.js"
import { download } from "./support/Instance.js"
import { finish, instance, logOf, pass, run, setSecret, start } from "./support/ProviderRuns.js"

const KEY = "fal-key-3b8e51:9a0c"

const falApp = (baseUrl: string, config: Record<string, unknown> = {}) => ({
  name: "Fal",
  nodes: [
    { id: "prompt", type: "input.text", config: { name: "prompt", required: true } },
    {
      id: "model",
      type: "provider.fal",
      config: {
        model: "fal-ai/flux/schnell",
        input: { prompt: "{{prompt}}", image_size: "square" },
        baseUrl,
        ...config
      }
    },
    { id: "result", type: "output.image", label: "Result" }
  ],
  edges: [{ source: "prompt", target: "model" }, { source: "model", target: "result" }]
})

/** fal's queue written as an `http.job`. */
const jobApp = (baseUrl: string, extra: Record<string, unknown> = {}) => ({
  name: "Job",
  nodes: [
    { id: "prompt", type: "input.text", config: { name: "prompt", required: true } },
    {
      id: "job",
      type: "http.job",
      config: {
        submit: { url: `${baseUrl}/fal-ai/flux/schnell`, body: { prompt: "{{prompt}}" } },
        headers: { Authorization: { secret: "FAL_KEY", prefix: "Key " } },
        id: "/request_id",
        status: { url: `${baseUrl}/fal-ai/flux/requests/{id}/status`, pointer: "/status", success: ["COMPLETED"] },
        result: { urlFrom: "/response_url", pick: "/seed", output: "text" },
        cancel: { urlFrom: "/cancel_url", method: "PUT" },
        ...extra
      }
    },
    { id: "seed", type: "output.text", label: "Seed" }
  ],
  edges: [{ source: "prompt", target: "job" }, { source: "job", target: "seed" }]
})

const setKey = (value: string, name = "FAL_KEY") => setSecret(name, value)

describe("provider.fal", () => {
  it.scoped("submits to the queue, polls status_url until COMPLETED, reads response_url, stores the image", () =>
    Effect.gen(function*() {
      yield* setKey(KEY)
      const png = yield* testImage(40, 24)
      const server = yield* TestFalServer.start({ key: KEY, steps: 2, image: png })
      const { executionId } = yield* start(falApp(server.baseUrl), { prompt: "a red fox" })
      const waiting = yield* Effect.fork(finish(executionId))
      yield* server.next
      yield* pass(1000)
      yield* server.next
      yield* pass(1500)
      const done = yield* Fiber.join(waiting)
      expect(done.errorMessage).toBeNull()
      expect(server.received.map((r) => `${r.method} ${r.path}`)).toEqual([
        "POST /fal-ai/flux/schnell",
        "GET /fal-ai/flux/requests/req-0001/status",
        "GET /fal-ai/flux/requests/req-0001/status",
        "GET /fal-ai/flux/requests/req-0001",
        "GET /files/0"
      ])
      expect(server.received[0]!.json).toEqual({ prompt: "a red fox", image_size: "square" })
      for (const r of server.received.slice(0, 4)) expect(r.headers["authorization"]).toBe(`Key ${KEY}`)
      expect(server.received[4]!.headers["authorization"]).toBeUndefined()
      const blob = yield* download(done.outputs[0]!.value!)
      expect(yield* describeImage(blob.bytes)).toEqual({ width: 40, height: 24, format: "png" })
      const lines = yield* logOf(executionId)
      expect(lines).toContain("info: request IN_QUEUE")
      expect(lines).toContain("info: request COMPLETED")
      expect(JSON.stringify([lines, done])).not.toContain(KEY)
    }).pipe(Effect.provide(instance())))

  it.scoped("a failed request's kept answer (504 with X-Fal-Error-Type) is not retried and shows its detail", () =>
    Effect.gen(function*() {
      yield* setKey(KEY)
      const server = yield* TestFalServer.start({
        key: KEY,
        steps: 1,
        model: () => ({ status: 504, errorType: "request_timeout", detail: "Request timed out" })
      })
      const { executionId } = yield* start(falApp(server.baseUrl), { prompt: "x" })
      const waiting = yield* Effect.fork(finish(executionId))
      yield* server.next
      yield* pass(1000)
      const done = yield* Fiber.join(waiting)
      expect(done.errorMessage).toBe(
        "node 'model' (provider.fal) failed: the provider answered 504 Gateway Timeout: Request timed out"
      )
      expect(server.received.filter((r) => r.path === "/fal-ai/flux/requests/req-0001")).toHaveLength(1)
    }).pipe(Effect.provide(instance())))

  it.scoped("a submit whose connection breaks is not sent again: the request may be in the queue", () =>
    Effect.gen(function*() {
      yield* setKey(KEY)
      const server = yield* TestFalServer.start({ key: KEY, steps: 1 })
      server.script("reset")
      const done = yield* run(falApp(server.baseUrl), { prompt: "x" })
      expect(done.errorMessage).toBe("node 'model' (provider.fal) failed: the request failed: the connection failed")
      expect(server.received).toHaveLength(1)
    }).pipe(Effect.provide(instance())))

  it.scoped("a validation error (422 with a detail list) shows its messages", () =>
    Effect.gen(function*() {
      yield* setKey(KEY)
      const server = yield* TestFalServer.start({
        key: KEY,
        steps: 1,
        model: () => ({
          status: 422,
          detail: [{ loc: ["body", "prompt"], msg: "Prompt contains a forbidden word", type: "value_error" }]
        })
      })
      const { executionId } = yield* start(falApp(server.baseUrl), { prompt: "x" })
      const waiting = yield* Effect.fork(finish(executionId))
      yield* server.next
      yield* pass(1000)
      const done = yield* Fiber.join(waiting)
      expect(done.errorMessage).toBe(
        "node 'model' (provider.fal) failed: the provider answered 422 Unprocessable Entity: Prompt contains a forbidden word"
      )
    }).pipe(Effect.provide(instance())))

  it.scoped("canceling the execution sends PUT cancel_url", () =>
    Effect.gen(function*() {
      yield* setKey(KEY)
      const server = yield* TestFalServer.start({ key: KEY, steps: 100 })
      const { executionId, principal } = yield* start(falApp(server.baseUrl), { prompt: "x" })
      const waiting = yield* Effect.fork(finish(executionId))
      yield* server.next
      yield* pass(1000)
      yield* server.next
      yield* (yield* Appexec.Appexec).executions.cancel(executionId, principal)
      yield* TestClock.adjust("1 second")
      const done = yield* Fiber.join(waiting)
      expect(done.errorMessage).toBe("The execution was canceled.")
      expect(server.canceled).toEqual(["req-0001"])
      const cancel = server.received.at(-1)!
      expect([cancel.method, cancel.path]).toEqual(["PUT", "/fal-ai/flux/requests/req-0001/cancel"])
      expect(cancel.headers["authorization"]).toBe(`Key ${KEY}`)
      expect(server.requests.get("req-0001")!.cancelRequested).toBe(true)
    }).pipe(Effect.provide(instance())))
})

describe("http.job", () => {
  it.scoped("runs fal's queue from config alone: {id} in the status URL, the result request, a picked field", () =>
    Effect.gen(function*() {
      yield* setKey(KEY)
      const server = yield* TestFalServer.start({ key: KEY, steps: 1 })
      const { executionId } = yield* start(jobApp(server.baseUrl), { prompt: "a red fox" })
      const waiting = yield* Effect.fork(finish(executionId))
      yield* server.next
      yield* pass(1000)
      const done = yield* Fiber.join(waiting)
      expect(done.errorMessage).toBeNull()
      expect(done.outputs[0]).toMatchObject({ type: "text", status: "completed", value: "42" })
      expect(server.received.map((r) => `${r.method} ${r.path}`)).toEqual([
        "POST /fal-ai/flux/schnell",
        "GET /fal-ai/flux/requests/req-0001/status",
        "GET /fal-ai/flux/requests/req-0001"
      ])
      expect(server.received[0]!.json).toEqual({ prompt: "a red fox" })
    }).pipe(Effect.provide(instance())))

  it.scoped("its timeoutMs cancels the job and fails the node", () =>
    Effect.gen(function*() {
      yield* setKey(KEY)
      const server = yield* TestFalServer.start({ key: KEY, steps: 100 })
      const { executionId } = yield* start(jobApp(server.baseUrl, { timeoutMs: 2000 }), { prompt: "x" })
      const waiting = yield* Effect.fork(finish(executionId))
      yield* server.next
      yield* pass(1000)
      yield* server.next
      yield* TestClock.adjust("1 second")
      const done = yield* Fiber.join(waiting)
      expect(done.errorMessage).toBe("node 'job' (http.job) failed: the job did not finish within 2s; it was canceled")
      expect(server.canceled).toEqual(["req-0001"])
    }).pipe(Effect.provide(instance())))

  it.scoped("refuses at import: URLs off the submit origin, {id} without id, a missing target, bad pointers", () =>
    Effect.gen(function*() {
      const appexec = yield* Appexec.Appexec
      const error = yield* appexec.apps.import({
        public: true,
        ...jobApp("https://queue.example.com", {
          id: undefined,
          headers: { "X-Token": "{{prompt}}" },
          status: { url: "https://elsewhere.example.com/{id}", pointer: "/status", success: ["OK"], failure: ["OK"] },
          result: { urlFrom: "/response_url", url: "https://queue.example.com/r" },
          cancel: { method: "PUT" }
        })
      }).pipe(Effect.flip)
      expect(error.message).toContain(
        "status.url must be on the submit URL's origin (https://queue.example.com), which receives the headers"
      )
      expect(error.message).toContain("status.url has {id}: give id, the pointer of the job's id")
      expect(error.message).toContain("result: give url or urlFrom, not both")
      expect(error.message).toContain("cancel: give url (with {id}) or urlFrom (a pointer)")
      expect(error.message).toContain("status: OK cannot be both a success and a failure")
      expect(error.message).toContain("header 'X-Token': headers are never filled from inputs; use a secret")
      const pointer = yield* appexec.apps.import({
        public: true,
        ...jobApp("https://queue.example.com", { id: "request_id" })
      }).pipe(Effect.flip)
      expect(pointer.message).toContain("config.id")
    }).pipe(Effect.provide(instance())))
})

describe("docs/nodes.md", () => {
  it.scoped("the provider jobs section's apps and nodes import as written", () =>
    Effect.gen(function*() {
      const page = readFileSync(new URL("../../../docs/nodes.md", import.meta.url), "utf8")
      const from = page.indexOf("## Provider jobs")
      const section = page.slice(from, page.indexOf("\n## ", from + 1))
      const blocks = [...section.matchAll(/^```json\n([\s\S]*?)^```$/gm)].map((m) => JSON.parse(m[1]!) as unknown)
      expect(blocks).toHaveLength(4)
      const appexec = yield* Appexec.Appexec
      for (const block of blocks) {
        // A lone node is imported in a small app that feeds it a prompt and outputs its value.
        const definition = typeof block === "object" && block !== null && "nodes" in block
          ? block
          : {
            name: `Node ${(block as { type: string }).type}`,
            nodes: [
              { id: "prompt", type: "input.text", config: { name: "prompt" } },
              { id: "question", type: "input.text", config: { name: "question" } },
              block,
              { id: "out", type: "output.json", label: "Out" }
            ],
            edges: [
              { source: "prompt", target: (block as { id: string }).id },
              { source: "question", target: (block as { id: string }).id },
              { source: (block as { id: string }).id, target: "out" }
            ]
          }
        const imported = yield* appexec.apps.import({ public: true, ...(definition as object) })
        expect(imported.appId).toBeTruthy()
      }
    }).pipe(Effect.provide(instance())))
})
