import { Appexec } from "@appexec/core"
import { TestHarness } from "@appexec/testing"
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"

/** Two optional text parameters into `util.first`, then a text output. */
const either = {
  name: "Either",
  nodes: [
    { id: "given", type: "input.text", config: { name: "given" } },
    { id: "fallback", type: "input.text", config: { name: "fallback" } },
    { id: "pick", type: "util.first" },
    { id: "result", type: "output.text", label: "Result" }
  ],
  edges: [
    { source: "given", target: "pick" },
    { source: "fallback", target: "pick" },
    { source: "pick", target: "result" }
  ]
}

const runWith = (inputs: Record<string, string>) =>
  Effect.gen(function*() {
    const appexec = yield* Appexec.Appexec
    const app = yield* appexec.apps.import({ ...either, public: true })
    const principal = yield* TestHarness.signIn()
    const started = yield* appexec.executions.start(principal, app.appId, inputs)
    return yield* appexec.executions.await(started.executionId)
  })

describe("util.first", () => {
  it.scoped("passes on the first value given, in edge order, passing over what was left empty", () =>
    Effect.gen(function*() {
      expect((yield* runWith({ given: "a", fallback: "b" })).outputs[0]!.value).toBe("a")
      expect((yield* runWith({ fallback: "b" })).outputs[0]!.value).toBe("b")
    }).pipe(Effect.provide(TestHarness.layer())))

  it.scoped("fails naming its upstream nodes when none was given", () =>
    Effect.gen(function*() {
      const done = yield* runWith({})
      expect(done.status).toBe("failed")
      expect(done.errorMessage).toBe("node 'pick' (util.first) failed: none of 'given', 'fallback' was given")
    }).pipe(Effect.provide(TestHarness.layer())))
})
