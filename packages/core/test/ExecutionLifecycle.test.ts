import { Execution, Ids } from "@appexec/api"
import { ExecutionLifecycle, ExecutionRecord } from "@appexec/core"
import { describe, expect, it } from "@effect/vitest"
import { Either, FastCheck as fc } from "effect"

const { transition, placeholder, isTerminal } = ExecutionLifecycle
const { versionOf } = ExecutionRecord
type Event = ExecutionLifecycle.ExecutionEvent

const queued = (): ExecutionRecord.ExecutionRecord => ({
  executionId: Ids.ExecutionId.make("0b1c2d3e-4f5a-4b6c-9d7e-8f9a0b1c2d3e"),
  workflowId: Ids.WorkflowId.make("8a1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d"),
  appId: Ids.AppId.make("3f0c1b8e-2d4a-4e5f-9a6b-7c8d9e0f1a2b"),
  workspaceId: Ids.WorkspaceId.make("3f0c1b8e-2d4a-4e5f-9a6b-7c8d9e0f1a2c"),
  userId: Ids.UserId.make("3f0c1b8e-2d4a-4e5f-9a6b-7c8d9e0f1a2d"),
  status: "queued",
  inputs: {},
  outputs: [placeholder("image", "Image"), placeholder("caption", "Caption")],
  errorMessage: null,
  webhookUrl: null,
  createdAt: 1_000,
  startedAt: null,
  completedAt: null
})

const both = [
  { id: "image", type: "image", value: "https://media.example/i.png" },
  { id: "caption", type: "text", value: "a cat" }
] as const
const outputTypes = { image: "image", caption: "text" } as const

const run = (events: ReadonlyArray<Event>) =>
  events.reduce(
    (acc, e) => Either.flatMap(acc, (r) => transition(r, e)),
    Either.right(queued()) as Either.Either<ExecutionRecord.ExecutionRecord, ExecutionLifecycle.InvalidTransition>
  )

describe("status state machine (docs/api.md#execution-states)", () => {
  it("queued → running sets startedAt and nothing else", () => {
    const running = Either.getOrThrow(transition(queued(), { _tag: "Started", at: 2_000 }))
    expect(running.status).toBe("running")
    expect(running.startedAt).toBe(2_000)
    expect(running.completedAt).toBeNull()
    expect(running.outputs.every((o) => o.status === "pending" && o.value === null && o.type === "pending")).toBe(true)
  })

  it("a transition keeps every field of the record, and adds none it lacked", () => {
    const full: ExecutionRecord.ExecutionRecord = {
      ...queued(),
      webhookUrl: "https://hooks.example/done",
      webhookEvents: ["start", "completed"],
      traceParent: "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
      priority: 3,
      attempt: 2
    }
    // Every field is set: a field added to the record is added here, and to what a transition copies.
    expect(Object.keys(full).sort()).toEqual(Object.keys(ExecutionRecord.ExecutionRecord.fields).sort())
    const running = Either.getOrThrow(transition(full, { _tag: "Started", at: 2_000 }))
    expect(running).toStrictEqual({ ...full, status: "running", startedAt: 2_000 })
    const completed = Either.getOrThrow(transition(running, { _tag: "Completed", at: 3_000, produced: both }))
    expect(completed).toStrictEqual({
      ...running,
      status: "completed",
      outputs: completed.outputs,
      completedAt: 3_000
    })
    // A settled output, produced or failed, has every field of an output.
    const failed = Either.getOrThrow(
      transition(running, {
        _tag: "Failed",
        at: 3_000,
        errorMessage: "x",
        produced: [both[0]],
        outputErrors: {},
        outputTypes
      })
    )
    for (const output of [...completed.outputs, ...failed.outputs]) {
      expect(Object.keys(output).sort()).toEqual(Object.keys(Execution.Output.fields).sort())
    }
    const plain = Either.getOrThrow(transition(queued(), { _tag: "Started", at: 2_000 }))
    expect(Object.keys(plain).sort()).toEqual(Object.keys(queued()).sort())
  })

  it("running → completed fills every output and sets completedAt", () => {
    const done = Either.getOrThrow(
      run([{ _tag: "Started", at: 2_000 }, { _tag: "Completed", at: 3_000, produced: both }])
    )
    expect(done.status).toBe("completed")
    expect(done.completedAt).toBe(3_000)
    expect(done.errorMessage).toBeNull()
    expect(done.outputs).toEqual([
      {
        id: "image",
        label: "Image",
        type: "image",
        value: "https://media.example/i.png",
        status: "completed",
        error: null
      },
      { id: "caption", label: "Caption", type: "text", value: "a cat", status: "completed", error: null }
    ])
  })

  it("completion with an output missing is refused", () => {
    const result = run([{ _tag: "Started", at: 2_000 }, { _tag: "Completed", at: 3_000, produced: [both[0]] }])
    expect(Either.isLeft(result) && result.left.reason).toBe("outputs not produced: caption")
  })

  it("running → failed keeps produced outputs and gives the others an error", () => {
    const failed = Either.getOrThrow(
      run([
        { _tag: "Started", at: 2_000 },
        {
          _tag: "Failed",
          at: 3_000,
          errorMessage: "node 'render' failed: out of ink",
          produced: [both[1]],
          outputErrors: {},
          outputTypes
        }
      ])
    )
    expect(failed.status).toBe("failed")
    expect(failed.errorMessage).toBe("node 'render' failed: out of ink")
    expect(failed.completedAt).toBe(3_000)
    expect(failed.outputs[0]).toEqual({
      id: "image",
      label: "Image",
      type: "image",
      value: null,
      status: "failed",
      error: "node 'render' failed: out of ink"
    })
    expect(failed.outputs[1]!.status).toBe("completed")
  })

  it.each([
    ["queued", [], { _tag: "Completed", at: 5, produced: both }],
    ["queued", [], { _tag: "Failed", at: 5, errorMessage: "x", produced: [], outputErrors: {}, outputTypes }],
    ["running", [{ _tag: "Started", at: 2 }], { _tag: "Started", at: 5 }],
    ["completed", [{ _tag: "Started", at: 2 }, { _tag: "Completed", at: 3, produced: both }], {
      _tag: "Started",
      at: 5
    }],
    [
      "completed",
      [{ _tag: "Started", at: 2 }, { _tag: "Completed", at: 3, produced: both }],
      { _tag: "Failed", at: 5, errorMessage: "late", produced: [], outputErrors: {}, outputTypes }
    ],
    [
      "failed",
      [{ _tag: "Started", at: 2 }, {
        _tag: "Failed",
        at: 3,
        errorMessage: "x",
        produced: [],
        outputErrors: {},
        outputTypes
      }],
      { _tag: "Completed", at: 5, produced: both }
    ]
  ] as ReadonlyArray<[string, ReadonlyArray<Event>, Event]>)(
    "from %s, refuses a forbidden event",
    (from, before, event) => {
      const state = Either.getOrThrow(run(before))
      expect(state.status).toBe(from)
      const result = transition(state, event)
      expect(Either.isLeft(result)).toBe(true)
    }
  )

  it("running → running with an output settled early: produced with its value, or failed with its error", () => {
    const early = Either.getOrThrow(
      run([
        { _tag: "Started", at: 2_000 },
        { _tag: "OutputProduced", produced: both[1] },
        { _tag: "OutputFailed", id: "image", type: "image", error: "node 'render' failed: out of ink" }
      ])
    )
    expect(early.status).toBe("running")
    expect(early.completedAt).toBeNull()
    expect(early.outputs).toEqual([
      {
        id: "image",
        label: "Image",
        type: "image",
        value: null,
        status: "failed",
        error: "node 'render' failed: out of ink"
      },
      { id: "caption", label: "Caption", type: "text", value: "a cat", status: "completed", error: null }
    ])
    // An output the execution does not have, or one settled while queued, is refused.
    expect(Either.isLeft(transition(early, { _tag: "OutputProduced", produced: { ...both[1], id: "nope" } }))).toBe(
      true
    )
    expect(Either.isLeft(transition(queued(), { _tag: "OutputProduced", produced: both[1] }))).toBe(true)
  })

  const arbitraryEvent: fc.Arbitrary<Event> = fc.oneof(
    fc.record({ _tag: fc.constant("Started" as const), at: fc.integer({ min: 0, max: 10_000 }) }),
    fc.record({ _tag: fc.constant("OutputProduced" as const), produced: fc.constantFrom(...both) }),
    fc.record({
      _tag: fc.constant("OutputFailed" as const),
      id: fc.constantFrom("image", "caption"),
      type: fc.constant("text" as const),
      error: fc.constant("broken")
    }),
    fc.record({
      _tag: fc.constant("Completed" as const),
      at: fc.integer({ min: 0, max: 10_000 }),
      produced: fc.subarray([...both])
    }),
    fc.record({
      _tag: fc.constant("Failed" as const),
      at: fc.integer({ min: 0, max: 10_000 }),
      errorMessage: fc.string({ maxLength: 5 }),
      produced: fc.subarray([...both]),
      outputErrors: fc.constant({}),
      outputTypes: fc.constant(outputTypes)
    })
  )

  it("no sequence of events breaks the rules", () => {
    const order = { queued: 0, running: 1, completed: 2, failed: 2 } as const
    fc.assert(
      fc.property(fc.array(arbitraryEvent, { maxLength: 12 }), (events) => {
        let state = queued()
        for (const event of events) {
          const before = state
          const next = transition(state, event)
          if (Either.isLeft(next)) continue
          state = next.right
          // Only forward moves, one step at a time (an output settled early stays running), and
          // nothing leaves a terminal state; the view's version never goes back.
          expect(isTerminal(before.status)).toBe(false)
          const early = event._tag === "OutputProduced" || event._tag === "OutputFailed"
          expect(order[state.status]).toBe(order[before.status] + (early ? 0 : 1))
          expect(versionOf(state.status, state.outputs)).toBeGreaterThanOrEqual(
            versionOf(before.status, before.outputs)
          )
          // Timestamps as the table says.
          expect(state.startedAt === null).toBe(state.status === "queued")
          expect(state.completedAt === null).toBe(!isTerminal(state.status))
          if (state.completedAt !== null) expect(state.completedAt).toBeGreaterThanOrEqual(state.startedAt!)
          if (before.startedAt !== null) expect(state.startedAt).toBe(before.startedAt)
          // Outputs: placeholders until the end; values on completion; an error on every unproduced output on failure.
          for (const o of state.outputs) {
            if (state.status === "queued") {
              expect(o).toMatchObject({ type: "pending", status: "pending", value: null, error: null })
            } else if (state.status === "running") {
              // Pending, or settled early: a value or an error, never both.
              expect(
                o.status === "pending"
                  ? o.value === null && o.error === null
                  : (o.value === null) !== (o.error === null)
              )
                .toBe(true)
            } else if (state.status === "completed") {
              expect(o.status).toBe("completed")
              expect(o.value).not.toBeNull()
              expect(o.type).not.toBe("pending")
            } else {
              expect(
                o.status === "completed" ? o.value !== null && o.error === null : o.value === null && o.error !== null
              ).toBe(true)
              expect(o.type).not.toBe("pending")
            }
          }
          expect(state.errorMessage !== null).toBe(state.status === "failed")
        }
      }),
      { numRuns: 500 }
    )
  })
})
