import { Appexec, ExecutionReports, SecretStore } from "@appexec/core"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Layer, Logger, Redacted } from "effect"
import * as FakeOrigin from "./support/FakeOrigin.js"
import { testImage } from "./support/Images.js"
import { download, layer, run } from "./support/Instance.js"

const provider = (url: string, config: Record<string, unknown> = {}, output = "output.text") => ({
  name: "Provider",
  nodes: [
    { id: "prompt", type: "input.text", config: { name: "prompt", required: true } },
    {
      id: "style",
      type: "input.options",
      config: { name: "style", options: ["plain", "neon & bold"], default: "plain" }
    },
    {
      id: "call",
      type: "http.request",
      config: {
        method: "POST",
        url,
        body: { prompt: "{{prompt}}", style: "{{style}}", n: 1 },
        headers: { Authorization: { secret: "provider_token", prefix: "Bearer " }, "X-Client": "appexec-tests" },
        pick: "/data/0/text",
        ...config
      }
    },
    { id: "answer", type: output, label: "Answer" }
  ],
  edges: [
    { source: "prompt", target: "call" },
    { source: "style", target: "call" },
    { source: "call", target: "answer" }
  ]
})

const secrets = { secrets: { provider_token: "tok-123" } }

describe("http.request", () => {
  it.scoped("sends the templated request with secret headers and yields the picked field", () =>
    Effect.gen(function*() {
      const origin = yield* FakeOrigin.start({
        "/v1/generate": {
          headers: { "content-type": "application/json" },
          body: JSON.stringify({ data: [{ text: "a poem about cats" }] })
        }
      })
      const done = yield* run(provider(origin.url("/v1/generate?style={{style}}")), {
        prompt: "cats \"in\" hats",
        style: "neon & bold"
      })
      expect(done.errorMessage).toBeNull()
      expect(done.outputs[0]).toMatchObject({ type: "text", value: "a poem about cats", status: "completed" })
      const request = origin.received[0]!
      expect(request.method).toBe("POST")
      expect(request.path).toBe("/v1/generate?style=neon%20%26%20bold")
      expect(request.headers["authorization"]).toBe("Bearer tok-123")
      expect(request.headers["x-client"]).toBe("appexec-tests")
      expect(request.headers["content-type"]).toBe("application/json")
      expect(JSON.parse(request.body)).toEqual({ prompt: "cats \"in\" hats", style: "neon & bold", n: 1 })
    }).pipe(Effect.provide(layer({ settings: secrets }))))

  it.scoped("the execution's log says the method, host and status, never the path, a header or a body", () =>
    Effect.gen(function*() {
      const origin = yield* FakeOrigin.start({
        "/v1/generate": { body: JSON.stringify({ data: [{ text: "fine" }] }) },
        "/v1/busy": { status: 503, body: "{\"token\":\"tok-123\"}" }
      })
      const reports = yield* ExecutionReports.ExecutionReports
      const linesOf = (executionId: Parameters<typeof reports.logs>[0]) =>
        Effect.map(
          reports.logs(executionId),
          (kept) =>
            kept.lines.map(({ report }) => report._tag === "Log" ? [report.nodeId, report.level, report.message] : [])
        )
      const host = new URL(origin.url("/")).host
      const ok = yield* run(provider(origin.url("/v1/generate?q={{prompt}}")), { prompt: "private words" })
      const okLines = yield* linesOf(ok.executionId)
      expect(okLines[0]).toEqual(["call", "info", `POST ${host}`])
      expect(okLines[1]![2]).toMatch(/^POST [\d.:]+: 200 OK in \d+ ms, \d+/)
      expect(okLines[1]![2]).toContain(`POST ${host}: `)
      const busy = yield* run(provider(origin.url("/v1/busy")), { prompt: "x" })
      const busyLines = yield* linesOf(busy.executionId)
      expect(busyLines.at(-1)!.slice(0, 2)).toEqual(["call", "error"])
      expect(busyLines.at(-1)![2]).toContain("503 Service Unavailable")
      const all = JSON.stringify([okLines, busyLines])
      for (const secret of ["tok-123", "private", "generate", "Bearer", "appexec-tests"]) {
        expect(all).not.toContain(secret)
      }
    }).pipe(Effect.provide(layer({ settings: secrets }))))

  it.scoped("a media URL it picks feeds an image output, which stores the image and serves it", () =>
    Effect.gen(function*() {
      const png = yield* testImage(32, 24)
      const origin = yield* FakeOrigin.start({
        "/img.png": { headers: { "content-type": "image/png" }, body: png },
        "/v1/images": (request) => ({
          headers: { "content-type": "application/json" },
          body: JSON.stringify({ data: [{ url: `http://${request.headers.host}/img.png` }] })
        })
      })
      const done = yield* run(
        provider(origin.url("/v1/images"), { pick: "/data/0/url", output: "url" }, "output.image"),
        {
          prompt: "a cat"
        }
      )
      expect(done.errorMessage).toBeNull()
      expect(done.outputs[0]).toMatchObject({ type: "image", status: "completed" })
      const blob = yield* download(done.outputs[0]!.value!)
      expect(blob.contentType).toBe("image/png")
      expect(Buffer.from(blob.bytes).equals(png)).toBe(true)
    }).pipe(Effect.provide(layer({ settings: secrets }))))

  it.scoped("yields JSON for a json output", () =>
    Effect.gen(function*() {
      const origin = yield* FakeOrigin.start({
        "/v1/meta": { body: JSON.stringify({ data: { score: 0.9, tags: ["a"] } }) }
      })
      const done = yield* run(provider(origin.url("/v1/meta"), { pick: "/data", output: "json" }, "output.json"), {
        prompt: "x"
      })
      expect(done.outputs[0]).toMatchObject({
        type: "json",
        value: "{\"score\":0.9,\"tags\":[\"a\"]}",
        status: "completed"
      })
    }).pipe(Effect.provide(layer({ settings: secrets }))))

  it.scoped("a non-2xx answer fails the node with the status only; the body goes to the operator's log", () => {
    const logged: Array<string> = []
    const capture = Logger.replace(
      Logger.defaultLogger,
      Logger.make(({ message }) => logged.push(String(Array.isArray(message) ? message.join(" ") : message)))
    )
    return Effect.gen(function*() {
      // Providers echo what they were sent, credentials included.
      const body = "{\"error\":\"overloaded\",\"token\":\"Bearer tok-123\"}"
      const origin = yield* FakeOrigin.start({ "/v1/generate": { status: 503, body } })
      const done = yield* run(provider(origin.url("/v1/generate")), { prompt: "x" })
      expect(done.status).toBe("failed")
      expect(done.errorMessage).toBe("node 'call' (http.request) failed: the endpoint answered 503 Service Unavailable")
      expect(done.outputs[0]).toMatchObject({ status: "failed", error: done.errorMessage })
      expect(JSON.stringify(done)).not.toContain("tok-123")
      expect(logged).toContain(`http.request: the endpoint answered 503 Service Unavailable: ${body}`)
    }).pipe(Effect.provide(layer({ settings: secrets }).pipe(Layer.provide(capture))))
  })

  it.scoped("an answer without the picked field, or not JSON, fails clearly", () =>
    Effect.gen(function*() {
      const origin = yield* FakeOrigin.start({ "/a": { body: "{\"data\":[]}" }, "/b": { body: "plain words" } })
      const a = yield* run(provider(origin.url("/a")), { prompt: "x" })
      expect(a.errorMessage).toContain("the endpoint's answer has no field at /data/0/text")
      const b = yield* run(provider(origin.url("/b")), { prompt: "x" })
      expect(b.errorMessage).toContain("the endpoint's answer is not JSON")
    }).pipe(Effect.provide(layer({ settings: secrets }))))

  it.scoped("a secret the operator did not configure fails the node without a request", () =>
    Effect.gen(function*() {
      const origin = yield* FakeOrigin.start({ "/v1/generate": { body: "{}" } })
      const done = yield* run(provider(origin.url("/v1/generate")), { prompt: "x" })
      expect(done.errorMessage).toContain(
        "The secret provider_token is not set (an operator sets it with: appexec secrets set provider_token)."
      )
      expect(origin.received).toHaveLength(0)
    }).pipe(Effect.provide(layer())))

  it.scoped("a header secret set with appexec secrets set: the workspace's over the instance's, over the settings", () =>
    Effect.gen(function*() {
      const origin = yield* FakeOrigin.start({
        "/v1/generate": { headers: { "content-type": "application/json" }, body: "{\"data\":[{\"text\":\"ok\"}]}" }
      })
      const store = yield* SecretStore.SecretStore
      const definition = provider(origin.url("/v1/generate"))
      // Only the settings' (APPEXEC_SECRET_PROVIDER_TOKEN) so far.
      expect((yield* run(definition, { prompt: "x" })).errorMessage).toBeNull()
      expect(origin.received.at(-1)!.headers["authorization"]).toBe("Bearer tok-123")
      yield* store.set("provider_token", Redacted.make("stored-instance"), undefined)
      yield* run(definition, { prompt: "x" })
      expect(origin.received.at(-1)!.headers["authorization"]).toBe("Bearer stored-instance")
      // `run` signs into the workspace `test`.
      const workspace = yield* (yield* Appexec.Appexec).workspaces.create("test")
      yield* store.set("provider_token", Redacted.make("stored-workspace"), workspace.workspaceId)
      const done = yield* run(definition, { prompt: "x" })
      expect(origin.received.at(-1)!.headers["authorization"]).toBe("Bearer stored-workspace")
      expect(JSON.stringify(done)).not.toContain("stored-")
    }).pipe(Effect.provide(layer({ settings: secrets }))))

  it.scoped("refuses at import: headers with placeholders, a host from placeholders, unknown placeholders, a bad pointer", () =>
    Effect.gen(function*() {
      const error = yield* run(
        provider("https://{{prompt}}.example.com/x?q={{nobody}}", {
          headers: { "X-Token": "{{prompt}}", Host: "evil" },
          pick: "data/0"
        }),
        { prompt: "x" }
      ).pipe(Effect.flip)
      expect(error._tag).toBe("InvalidAppDefinition")
      expect(error.message).toContain("config.pick")
      const fixedPick = yield* run(
        provider("https://{{prompt}}.example.com/x?q={{nobody}}", {
          headers: { "X-Token": "{{prompt}}", Host: "evil" }
        }),
        { prompt: "x" }
      ).pipe(Effect.flip)
      expect(fixedPick.message).toContain("placeholder {{nobody}} does not name an upstream node")
      expect(fixedPick.message).toContain("url: the scheme and host must be written out, not filled from placeholders")
      expect(fixedPick.message).toContain("header 'X-Token': headers are never filled from inputs; use a secret")
      expect(fixedPick.message).toContain("header 'Host' is set by appexec")
    }).pipe(Effect.provide(layer())))

  it.scoped("the private-network guard applies to provider calls", () =>
    Effect.gen(function*() {
      const origin = yield* FakeOrigin.start({ "/v1/generate": { body: "{}" } })
      const done = yield* run(provider(origin.url("/v1/generate")), { prompt: "x" })
      expect(done.errorMessage).toBe(
        "node 'call' (http.request) failed: the request was refused: its host 127.0.0.1 is a loopback address, " +
          "which outbound requests reach only when private networks are allowed (allowPrivateNetworks of " +
          "NodeOutboundHttp; appexec serve --allow-private-networks, or APPEXEC_ALLOW_PRIVATE_NETWORKS=true)"
      )
      expect(origin.received).toHaveLength(0)
    }).pipe(Effect.provide(layer({ settings: secrets, outbound: { allowPrivateNetworks: false } }))))
})
