/**
 * Partial results (docs/nodes.md#partial-results) in virtual time: a process node's `partial`
 * runs the output nodes it feeds on the value, and their outputs show it `completed` while the
 * execution runs — in a chain and beside another branch alike; an output shows the first partial
 * value only; an output node that refuses the value leaves its output pending; the node's final
 * value replaces the partial one, and a node
 * that fails after a partial leaves the output failed with its error.
 */
import type { ExecutionId } from "@appexec/api/Ids"
import { Appexec, NodeType } from "@appexec/core"
import { TestHarness } from "@appexec/testing"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Schema, TestClock } from "effect"

/** Shows `draft` at once, `draft 2` at 100 ms, then ends at 200 ms with `final` (or fails, when told). */
const drafter = NodeType.defineNode({
  type: "test.drafter",
  description: "Shows drafts.",
  role: "process",
  inputs: { min: 1, max: 1 },
  config: Schema.Struct({ fail: Schema.optionalWith(Schema.Boolean, { default: () => false }) }),
  run: ({ config, partial }) =>
    Effect.gen(function*() {
      yield* partial(NodeType.NodeValue.text("draft"))
      yield* Effect.sleep("100 millis")
      yield* partial(NodeType.NodeValue.text("draft 2"))
      yield* Effect.sleep("100 millis")
      if (config.fail) return yield* Effect.fail(new NodeType.NodeFailure({ message: "ran out of ink" }))
      return NodeType.NodeValue.text("final")
    })
})

/** An app: the drafter into a text output and a JSON output (which refuses text that is not JSON). */
const app = (options: { readonly fail?: boolean; readonly branch?: boolean } = {}) => ({
  name: `Drafts ${JSON.stringify(options)}`,
  public: true,
  nodes: [
    { id: "prompt", type: "input.text", label: "Prompt", config: { name: "prompt", required: true } },
    { id: "draft", type: "test.drafter", label: "Draft", config: { fail: options.fail ?? false } },
    { id: "text", type: "output.text", label: "Text", config: {} },
    ...(options.branch === true ? [{ id: "json", type: "output.json", label: "Json", config: {} }] : [])
  ],
  edges: [
    { source: "prompt", target: "draft" },
    { source: "draft", target: "text" },
    ...(options.branch === true ? [{ source: "draft", target: "json" }] : [])
  ]
})

const harness = TestHarness.layer({ nodes: [drafter], config: { pollInterval: "1 day" } })

const start = (definition: unknown) =>
  Effect.gen(function*() {
    const appexec = yield* Appexec.Appexec
    const imported = yield* appexec.apps.import(definition)
    const principal = yield* TestHarness.signIn()
    const started = yield* appexec.executions.start(principal, imported.appId, { prompt: "hi" })
    const get = appexec.executions.get(principal, started.executionId)
    return { get, done: appexec.executions.await(started.executionId as ExecutionId) }
  })

describe("partial results", () => {
  it.scoped("a chain's output shows the first partial value while it runs; the final value replaces it", () =>
    Effect.gen(function*() {
      const { done, get } = yield* start(app())
      yield* TestClock.adjust(0)
      expect(yield* get).toMatchObject({
        status: "running",
        outputs: [{ id: "text", type: "text", value: "draft", status: "completed", error: null }]
      })
      yield* TestClock.adjust(100)
      // A second partial value is not shown: the view's version (and so the streams) would not see it.
      expect(yield* get).toMatchObject({ status: "running", outputs: [{ value: "draft", status: "completed" }] })
      yield* TestClock.adjust(100)
      expect(yield* done).toMatchObject({ status: "completed", outputs: [{ value: "final", status: "completed" }] })
    }).pipe(Effect.provide(harness)))

  it.scoped("beside another output, one that refuses the partial value stays pending", () =>
    Effect.gen(function*() {
      const { done, get } = yield* start(app({ branch: true }))
      yield* TestClock.adjust(0)
      const running = yield* get
      expect(running.status).toBe("running")
      expect(running.outputs.map((o) => [o.id, o.status, o.value])).toEqual([
        ["text", "completed", "draft"],
        ["json", "pending", null]
      ])
      yield* TestClock.adjust(200)
      const ended = yield* done
      // `final` is not JSON either: the JSON output fails at the end, as it would without partials.
      expect(ended.outputs.map((o) => [o.id, o.status, o.value])).toEqual([
        ["text", "completed", "final"],
        ["json", "failed", null]
      ])
    }).pipe(Effect.provide(harness)))

  it.scoped("a node that fails after a partial value leaves its output failed with the node's error", () =>
    Effect.gen(function*() {
      const { done, get } = yield* start(app({ fail: true }))
      yield* TestClock.adjust(100)
      expect((yield* get).outputs[0]).toMatchObject({ value: "draft", status: "completed" })
      yield* TestClock.adjust(100)
      const ended = yield* done
      expect(ended.status).toBe("failed")
      expect(ended.outputs[0]).toMatchObject({ status: "failed", value: null })
      expect(ended.outputs[0]!.error).toContain("ran out of ink")
    }).pipe(Effect.provide(harness)))
})
