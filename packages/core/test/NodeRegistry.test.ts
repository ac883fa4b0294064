import { Appexec, CoreNodes, Errors, NodeRegistry, NodeType } from "@appexec/core"
import { TestHarness } from "@appexec/testing"
import { describe, expect, it } from "@effect/vitest"
import { Context, Effect, Fiber, Layer, Schema, TestClock } from "effect"

/** A service an operator's node needs. */
class Shouter extends Context.Tag("test/Shouter")<Shouter, { readonly shout: (s: string) => string }>() {}

const shout = NodeType.defineNode({
  type: "text.shout",
  description: "Upper-cases its input and adds marks",
  role: "process",
  inputs: { min: 1, max: 1 },
  config: Schema.Struct({ marks: Schema.Number.pipe(Schema.int(), Schema.between(1, 5)) }),
  run: ({ config, upstream }) =>
    Effect.map(
      Shouter,
      (s) =>
        NodeType.NodeValue.text(
          `${s.shout(NodeType.NodeValue.asText(upstream[0]!.value) ?? "")}${"!".repeat(config.marks)}`
        )
    )
})

const crash = NodeType.defineNode({
  type: "test.crash",
  description: "Dies with a secret in its defect",
  role: "process",
  inputs: { min: 0, max: 1 },
  config: Schema.Struct({}),
  run: () => Effect.die(new Error("secret connection string postgres://admin:hunter2@db"))
})

const shoutingApp = (marks: unknown) => ({
  name: "Shout",
  public: true,
  nodes: [
    { id: "prompt", type: "input.text", config: { name: "prompt", required: true } },
    { id: "loud", type: "text.shout", config: { marks } },
    { id: "out", type: "output.text", label: "Out" }
  ],
  edges: [
    { source: "prompt", target: "loud" },
    { source: "loud", target: "out" }
  ]
})

const ShouterLive = Layer.succeed(Shouter, { shout: (s) => s.toUpperCase() })

describe("node registry and defineNode", () => {
  it.scoped("an operator's node type, with the service it needs, runs like a built-in", () =>
    Effect.gen(function*() {
      const appexec = yield* Appexec.Appexec
      const app = yield* appexec.apps.import(shoutingApp(3))
      const principal = yield* TestHarness.signIn()
      const started = yield* appexec.executions.start(principal, app.appId, { prompt: "hello" })
      const waiting = yield* Effect.fork(appexec.executions.await(started.executionId))
      yield* TestClock.adjust(0)
      const done = yield* Fiber.join(waiting)
      expect(done.outputs[0]!.value).toBe("HELLO!!!")
    }).pipe(Effect.provide(TestHarness.layer({ nodes: [shout] }).pipe(Layer.provide(ShouterLive)))))

  it.scoped("its config is validated by its schema at import time", () =>
    Effect.gen(function*() {
      const appexec = yield* Appexec.Appexec
      const error = yield* Effect.flip(appexec.apps.import(shoutingApp(9)))
      expect(error.message).toContain("node 'loud': config.marks: Expected a number between 1 and 5, actual 9")
    }).pipe(Effect.provide(TestHarness.layer({ nodes: [shout] }).pipe(Layer.provide(ShouterLive)))))

  it.scoped("a node type's defect fails the execution without showing its internals", () =>
    Effect.gen(function*() {
      const appexec = yield* Appexec.Appexec
      const app = yield* appexec.apps.import({
        name: "Crash",
        public: true,
        nodes: [
          { id: "boom", type: "test.crash" },
          { id: "out", type: "output.text", label: "Out" }
        ],
        edges: [{ source: "boom", target: "out" }]
      })
      const principal = yield* TestHarness.signIn()
      const started = yield* appexec.executions.start(principal, app.appId, {})
      const waiting = yield* Effect.fork(appexec.executions.await(started.executionId))
      yield* TestClock.adjust(0)
      const done = yield* Fiber.join(waiting)
      expect(done.status).toBe("failed")
      expect(done.errorMessage).toBe("node 'boom' (test.crash) failed unexpectedly")
      expect(JSON.stringify(done)).not.toContain("hunter2")
    }).pipe(Effect.provide(TestHarness.layer({ nodes: [crash] }))))

  it("registering one type name twice fails the layer with a typed configuration error", () => {
    const error = Effect.runSync(
      Effect.flip(
        Effect.provide(NodeRegistry.NodeRegistry, NodeRegistry.layer([...CoreNodes.coreNodes, CoreNodes.outputText]))
      )
    )
    expect(error).toBeInstanceOf(Errors.InvalidConfiguration)
    expect(error.message).toBe("Invalid setting 'nodes': node type 'output.text' is registered twice")
  })
})
