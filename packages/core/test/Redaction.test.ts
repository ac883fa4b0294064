/**
 * One redactor for every node type: an operator's own node (`defineNode`, no masking of its own)
 * that reads a secret and then puts it, and its base64, everywhere a node can — its output (text
 * and JSON), another node's failure, the execution's log and progress, the operator's log with a
 * cause — leaves it nowhere: not in the execution as stored and polled (outputs, `errorMessage`,
 * the per-output error), its stored reports (log and progress), its event stream, the webhook
 * body a real receiver gets, or any log line; each place says `[secret]` instead. With no secret registered, nothing is
 * masked.
 */
import { Appexec, ExecutionReports, NodeType, Redactor, SecretStore } from "@appexec/core"
import { TestHarness, TestReceiver } from "@appexec/testing"
import { describe, expect, it } from "@effect/vitest"
import { Chunk, Effect, Layer, Redacted, Schema, Stream } from "effect"
import * as LogCapture from "./fixtures/LogCapture.js"

const TOKEN = "tok_9c1d8e7f6a5b4c3d/2e1f+0a"
const BASE64 = btoa(TOKEN)

/** Reads the secret and echoes it wherever a node writes. */
const leaky = NodeType.defineNode({
  type: "test.leaky",
  description: "Echoes its secret everywhere.",
  role: "process",
  inputs: { min: 1, max: 1 },
  config: Schema.Struct({ as: Schema.Literal("text", "json", "failure") }),
  run: ({ config, execution, log, progress }) =>
    Effect.gen(function*() {
      const token = Redacted.value(yield* SecretStore.require("API_TOKEN", execution.workspaceId))
      yield* log(`calling with Authorization: Bearer ${token}`)
      yield* progress(0.5, `sent ${btoa(token)}`)
      yield* Effect.logWarning(
        `the provider said: bad token ${token}`,
        new Error(`refused ${encodeURIComponent(token)}`)
      )
      switch (config.as) {
        case "text":
          return NodeType.NodeValue.text(`your token: Bearer ${token} (${btoa(token)})`)
        case "json":
          return NodeType.NodeValue.json({ headers: { authorization: `Bearer ${token}` }, b64: btoa(token) })
        case "failure":
          return yield* new NodeType.NodeFailure({
            message: `the endpoint answered 401: {"error": "bad token ${token}"}`
          })
      }
    })
})

const app = {
  name: "Leaky",
  public: true,
  nodes: [
    { id: "prompt", type: "input.text", config: { name: "prompt" } },
    { id: "asText", type: "test.leaky", config: { as: "text" } },
    { id: "asJson", type: "test.leaky", config: { as: "json" } },
    { id: "failing", type: "test.leaky", config: { as: "failure" } },
    { id: "text", type: "output.text", label: "Text" },
    { id: "json", type: "output.json", label: "JSON" },
    { id: "broken", type: "output.text", label: "Broken" }
  ],
  edges: [
    { source: "prompt", target: "asText" },
    { source: "prompt", target: "asJson" },
    { source: "prompt", target: "failing" },
    { source: "asText", target: "text" },
    { source: "asJson", target: "json" },
    { source: "failing", target: "broken" }
  ]
}

const masterKey = Redacted.make(new Uint8Array(32).fill(9))

describe("one redactor for every node type", () => {
  it.scopedLive("a secret an operator's node echoes is masked in every place an execution is written", () => {
    const capture = LogCapture.make()
    return Effect.gen(function*() {
      const receiver = yield* TestReceiver.start()
      yield* Effect.gen(function*() {
        const appexec = yield* Appexec.Appexec
        yield* Effect.flatMap(
          SecretStore.SecretStore,
          (store) => store.set("API_TOKEN", Redacted.make(TOKEN), undefined)
        )
        const principal = yield* TestHarness.signIn()
        const { appId } = yield* appexec.apps.import(app)
        const started = yield* appexec.executions.start(principal, appId, { prompt: "hi" }, {
          webhook: receiver.url("/hook")
        })
        const hook = yield* receiver.next
        const done = yield* appexec.executions.get(principal, started.executionId)
        const logs = yield* appexec.executions.logs(principal, started.executionId)
        const events = yield* Stream.runCollect(yield* appexec.executions.events(principal, started.executionId))

        expect(done.status).toBe("failed")
        expect(done.outputs.find((o) => o.id === "text")?.value).toBe("your token: Bearer [secret] ([secret])")
        expect(JSON.parse(done.outputs.find((o) => o.id === "json")!.value!)).toEqual({
          headers: { authorization: "Bearer [secret]" },
          b64: "[secret]"
        })
        expect(done.errorMessage).toBe(
          `node 'failing' (test.leaky) failed: the endpoint answered 401: {"error": "bad token [secret]"}`
        )
        expect(done.outputs.find((o) => o.id === "broken")?.error).toBe(done.errorMessage)
        expect(logs.map((l) => l.message)).toContain("calling with Authorization: Bearer [secret]")
        const stored = yield* Effect.flatMap(
          ExecutionReports.ExecutionReports,
          (reports) => reports.after(started.executionId, 0)
        )
        const progress = stored.reports.flatMap(({ report }) => report._tag === "Progress" ? [report.message] : [])
        expect(progress).toContain("sent [secret]")
        const operatorLines = capture.lines.map((l) => JSON.stringify(l.message)).join("\n")
        expect(operatorLines).toContain("bad token [secret]")

        const written = [
          JSON.stringify(done),
          JSON.stringify(logs),
          JSON.stringify(Chunk.toReadonlyArray(events)),
          JSON.stringify(stored),
          new TextDecoder().decode(hook.rawBody),
          JSON.stringify(capture.lines)
        ]
        for (const text of written) {
          expect(text).not.toContain(TOKEN)
          expect(text).not.toContain(BASE64)
          expect(text).not.toContain(encodeURIComponent(TOKEN))
        }
      }).pipe(
        Effect.provide(
          TestHarness.layer({ nodes: [leaky], webhooks: true, config: { masterKey } }).pipe(
            Layer.provide(capture.layer)
          )
        )
      )
    })
  })

  it.effect("masks nothing while no secret is registered", () =>
    Effect.gen(function*() {
      const redactor = yield* Redactor.Redactor
      expect(redactor.active()).toBe(false)
      const appexec = yield* Appexec.Appexec
      const principal = yield* TestHarness.signIn()
      const { appId } = yield* appexec.apps.import({
        name: "Plain",
        public: true,
        nodes: [
          { id: "prompt", type: "input.text", config: { name: "prompt" } },
          { id: "out", type: "output.text", label: "Out" }
        ],
        edges: [{ source: "prompt", target: "out" }]
      })
      const started = yield* appexec.executions.start(principal, appId, { prompt: TOKEN })
      const done = yield* appexec.executions.await(started.executionId)
      expect(done.outputs[0]?.value).toBe(TOKEN)
    }).pipe(Effect.provide(TestHarness.layer())))
})
