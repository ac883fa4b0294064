import { Execution, Ids } from "@appexec/api"
import { ExecutionRecord } from "@appexec/core"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Schema } from "effect"

const record = (overrides: Partial<ExecutionRecord.ExecutionRecord>): ExecutionRecord.ExecutionRecord => ({
  executionId: Ids.ExecutionId.make("6f1c2a1e-3b7d-4c1a-9e2f-0a1b2c3d4e5f"),
  workflowId: Ids.WorkflowId.make("0b7e4d2c-1a2b-4c3d-8e9f-101112131415"),
  appId: Ids.AppId.make("1c2d3e4f-5a6b-4c7d-8e9f-a0b1c2d3e4f5"),
  workspaceId: Ids.WorkspaceId.make("2d3e4f5a-6b7c-4d8e-9f0a-b1c2d3e4f5a6"),
  userId: Ids.UserId.make("3e4f5a6b-7c8d-4e9f-8a0b-c1d2e3f4a5b6"),
  status: "completed",
  inputs: { prompt: "hi" },
  outputs: [
    { id: "a", label: "A \"quoted\" ü", type: "text", value: "line\nbreak", status: "completed", error: null },
    { id: "b", label: "B", type: "image", value: null, status: "failed", error: "node 'b' failed" }
  ],
  errorMessage: null,
  webhookUrl: "https://example.com/hook",
  createdAt: 1_800_000_000_123,
  startedAt: 1_800_000_000_456,
  completedAt: 1_800_000_001_789,
  ...overrides
})

describe("executionJson", () => {
  it.effect.each(
    [
      ["completed", {}],
      ["queued", { status: "queued", startedAt: null, completedAt: null, outputs: [] }],
      ["running", { status: "running", completedAt: null }],
      ["failed", { status: "failed", errorMessage: "node 'b' failed: \"bad\" \\ \u0001 \n ü" }],
      ["never started", { status: "failed", startedAt: null, errorMessage: "The execution was canceled." }]
    ] as const
  )("is the JSON the Execution schema encodes (%s)", ([, overrides]) =>
    Effect.gen(function*() {
      const r = record(overrides)
      const viaSchema = yield* Schema.encode(Schema.parseJson(Execution.Execution))(ExecutionRecord.toExecution(r))
      expect(ExecutionRecord.executionJson(ExecutionRecord.viewOf(r))).toBe(viaSchema)
    }))

  it("splices the outputs as stored, without parsing them", () => {
    const view = { ...ExecutionRecord.viewOf(record({})), outputsJson: "[ ]" }
    expect(JSON.parse(ExecutionRecord.executionJson(view)).outputs).toEqual([])
  })
})
