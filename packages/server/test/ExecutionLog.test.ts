/**
 * The execution log of `serve` and `worker` (`ExecutionLog`): a line per transition at Info, those
 * announced together written in one go; none, and no subscription, at a level above Info.
 */
import { Ids } from "@appexec/api"
import { ExecutionEvents, ExecutionLifecycle, type ExecutionRecord } from "@appexec/core"
import { describe, expect, it } from "@effect/vitest"
import { Effect, HashMap, Layer, Logger, LogLevel } from "effect"
import * as ExecutionLog from "../src/ExecutionLog.js"

const record = (n: number, status: ExecutionRecord.ExecutionRecord["status"]): ExecutionRecord.ExecutionRecord => ({
  executionId: Ids.ExecutionId.make(`0b1c2d3e-4f5a-4b6c-9d7e-8f9a0b1c2d3${n}`),
  workflowId: Ids.WorkflowId.make("8a1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d"),
  appId: Ids.AppId.make("3f0c1b8e-2d4a-4e5f-9a6b-7c8d9e0f1a2b"),
  workspaceId: Ids.WorkspaceId.make("3f0c1b8e-2d4a-4e5f-9a6b-7c8d9e0f1a2c"),
  userId: Ids.UserId.make("3f0c1b8e-2d4a-4e5f-9a6b-7c8d9e0f1a2d"),
  status,
  inputs: {},
  outputs: [ExecutionLifecycle.placeholder("out", "Out")],
  errorMessage: null,
  webhookUrl: null,
  createdAt: 1_000,
  startedAt: null,
  completedAt: null
})

/** The lines logged while `records` are announced, the log running at `level`. */
const logged = (level: LogLevel.LogLevel, records: ReadonlyArray<ExecutionRecord.ExecutionRecord>) => {
  const lines: Array<{ message: unknown; executionId: unknown; status: unknown }> = []
  const capture = Logger.replace(
    Logger.defaultLogger,
    Logger.make(({ annotations, message }) =>
      lines.push({
        message,
        executionId: HashMap.unsafeGet(annotations, "executionId"),
        status: HashMap.unsafeGet(annotations, "status")
      })
    )
  )
  return Effect.gen(function*() {
    yield* ExecutionLog.run
    const events = yield* ExecutionEvents.ExecutionEvents
    yield* Effect.forEach(records, events.publish, { discard: true })
    // The log's fiber takes what piled up.
    yield* Effect.repeatN(Effect.yieldNow(), 10)
    return lines
  }).pipe(
    Effect.scoped,
    Effect.provide(Layer.mergeAll(ExecutionEvents.ExecutionEvents.layer, capture, Logger.minimumLogLevel(level)))
  )
}

describe("ExecutionLog", () => {
  it.effect("writes a line per transition, with the execution and its status, at Info", () =>
    Effect.gen(function*() {
      const records = [record(1, "queued"), record(2, "queued"), record(1, "running")]
      const lines = yield* logged(LogLevel.Info, records)
      expect(lines).toEqual(records.map((r) => ({
        message: `execution ${r.executionId} ${r.status}`,
        executionId: r.executionId,
        status: r.status
      })))
    }))

  it.effect("writes nothing above Info", () =>
    Effect.gen(function*() {
      expect(yield* logged(LogLevel.Warning, [record(1, "queued"), record(1, "running")])).toEqual([])
    }))
})
