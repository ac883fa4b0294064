import { Execution } from "@appexec/api"
import { ExecutionRecord } from "@appexec/core"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Schema } from "effect"
import { executionRecord } from "./fixtures/Records.js"

describe("executionJson", () => {
  it.effect.each(
    [
      ["completed", {}],
      ["queued", { status: "queued", startedAt: null, completedAt: null, outputs: [] }],
      ["running", { status: "running", completedAt: null }],
      ["failed", { status: "failed", errorMessage: "node 'b' failed: \"bad\" \\ \u0001 \n ü" }],
      ["never started", { status: "failed", startedAt: null, errorMessage: "The execution was canceled." }],
      ["inputs to escape", { inputs: { "say \"hi\"": "line\nbreak \\ \u0001 ü", "": "" } }]
    ] as const
  )("is the JSON the Execution schema encodes (%s)", ([, overrides]) =>
    Effect.gen(function*() {
      const r = executionRecord(overrides)
      const viaSchema = yield* Schema.encode(Schema.parseJson(Execution.Execution))(ExecutionRecord.toExecution(r))
      expect(ExecutionRecord.executionJson(ExecutionRecord.viewOf(r))).toBe(viaSchema)
    }))

  it("splices the outputs and the inputs as stored, without parsing them", () => {
    const view = { ...ExecutionRecord.viewOf(executionRecord()), outputsJson: "[ ]", inputsJson: "{ }" }
    const json = ExecutionRecord.executionJson(view)
    expect(json).toContain(`"outputs":[ ],"inputs":{ },`)
    expect(JSON.parse(json)).toMatchObject({ outputs: [], inputs: {} })
  })
})
