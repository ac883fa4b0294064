/**
 * What storage keeps of an execution, and the wire views (`Execution`, `StartedExecution` of
 * `@appexec/api`) projected from it.
 */
import { Execution, Ids } from "@appexec/api"
import { Schema } from "effect"

/**
 * What storage keeps of an execution. Times are epoch milliseconds read from `Clock`.
 * `inputs` are the validated inputs, defaults applied.
 */
export const ExecutionRecord = Schema.Struct({
  executionId: Ids.ExecutionId,
  workflowId: Ids.WorkflowId,
  appId: Ids.AppId,
  workspaceId: Ids.WorkspaceId,
  userId: Ids.UserId,
  status: Execution.ExecutionStatus,
  inputs: Schema.Record({ key: Schema.String, value: Schema.String }),
  outputs: Schema.Array(Execution.Output),
  errorMessage: Schema.NullOr(Schema.String),
  webhookUrl: Schema.NullOr(Schema.String),
  createdAt: Schema.Number,
  startedAt: Schema.NullOr(Schema.Number),
  completedAt: Schema.NullOr(Schema.Number),
  /**
   * The W3C `traceparent` of the span that accepted the execution, so the worker's run (in any
   * process) continues that trace. Absent on records made without one.
   */
  traceParent: Schema.optional(Schema.String)
})
export type ExecutionRecord = typeof ExecutionRecord.Type

const toDate = (ms: number | null): Date | null => (ms === null ? null : new Date(ms))

/** The polling view of a stored execution. */
export const toExecution = (record: ExecutionRecord): Execution.Execution => ({
  executionId: record.executionId,
  workflowId: record.workflowId,
  status: record.status,
  outputs: record.outputs,
  errorMessage: record.errorMessage,
  startedAt: toDate(record.startedAt),
  completedAt: toDate(record.completedAt),
  createdAt: new Date(record.createdAt)
})

/** The start-response view of a freshly queued execution. */
export const toStartedExecution = (record: ExecutionRecord): Execution.StartedExecution => ({
  executionId: record.executionId,
  workflowId: record.workflowId,
  status: "queued",
  webhookUrl: record.webhookUrl,
  outputs: record.outputs
})
