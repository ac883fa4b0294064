import { Appexec, JsonPointer } from "@appexec/core"
import { TestHarness } from "@appexec/testing"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Option } from "effect"

/** A JSON text parameter picked twice: a string to a text output, an array to a JSON output. */
const picker = (pointers: { readonly text: string; readonly json: string }) => ({
  name: "Picker",
  nodes: [
    { id: "doc", type: "input.text", config: { name: "doc", required: true } },
    { id: "name", type: "json.pick", config: { pointer: pointers.text } },
    { id: "list", type: "json.pick", config: { pointer: pointers.json } },
    { id: "text", type: "output.text", label: "Text" },
    { id: "json", type: "output.json", label: "JSON" }
  ],
  edges: [
    { source: "doc", target: "name" },
    { source: "doc", target: "list" },
    { source: "name", target: "text" },
    { source: "list", target: "json" }
  ]
})

const runWith = (definition: unknown, inputs: Record<string, string>) =>
  Effect.gen(function*() {
    const appexec = yield* Appexec.Appexec
    const app = yield* appexec.apps.import({ ...(definition as object), public: true })
    const principal = yield* TestHarness.signIn()
    const started = yield* appexec.executions.start(principal, app.appId, inputs)
    return yield* appexec.executions.await(started.executionId)
  })

describe("json.pick", () => {
  it.scoped("passes a string on as text and anything else as JSON", () =>
    Effect.gen(function*() {
      const done = yield* runWith(picker({ text: "/a~1b/0/name", json: "/lines" }), {
        doc: JSON.stringify({ "a/b": [{ name: "Ada" }], lines: [{ text: "one" }, 2] })
      })
      expect(done.status).toBe("completed")
      expect(done.outputs.map((o) => [o.type, o.value])).toEqual([
        ["text", "Ada"],
        ["json", "[{\"text\":\"one\"},2]"]
      ])
    }).pipe(Effect.provide(TestHarness.layer())))

  it.scoped("fails saying what is missing, and when the upstream text is not JSON", () =>
    Effect.gen(function*() {
      const missing = yield* runWith(picker({ text: "/name", json: "/lines/5" }), { doc: "{\"lines\":[]}" })
      expect(missing.status).toBe("failed")
      expect(missing.outputs.map((o) => o.error)).toEqual([
        "node 'name' (json.pick) failed: nothing at /name in the JSON of node 'doc'",
        "node 'list' (json.pick) failed: nothing at /lines/5 in the JSON of node 'doc'"
      ])
      const notJson = yield* runWith(picker({ text: "/name", json: "" }), { doc: "plain words" })
      expect(notJson.outputs[0]!.error).toBe(
        "node 'name' (json.pick) failed: node 'doc' produced text that is not valid JSON"
      )
    }).pipe(Effect.provide(TestHarness.layer())))

  it.scoped("refuses at import a pointer that is not one", () =>
    Effect.gen(function*() {
      const appexec = yield* Appexec.Appexec
      const error = yield* Effect.flip(appexec.apps.import({ ...picker({ text: "name", json: "/x~2" }), public: true }))
      expect(error.message).toContain("pointer must be a JSON Pointer")
    }).pipe(Effect.provide(TestHarness.layer())))

  it("JsonPointer: escapes, array indexes and the whole document", () => {
    expect(JsonPointer.pick({ "~k": { "/": 1 } }, "/~0k/~1")).toEqual(Option.some(1))
    expect(JsonPointer.pick([10, 20], "/1")).toEqual(Option.some(20))
    expect(JsonPointer.pick([10, 20], "/01")).toEqual(Option.none())
    expect(JsonPointer.pick({ a: 1 }, "")).toEqual(Option.some({ a: 1 }))
    expect(JsonPointer.pick({ a: 1 }, "/toString")).toEqual(Option.none())
    expect(JsonPointer.isPointer("/a/b")).toBe(true)
    expect(JsonPointer.isPointer("a")).toBe(false)
  })
})
