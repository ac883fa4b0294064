/**
 * The execution resources of SPEC §2.4–§2.5, exactly as they appear on the wire, and the
 * stored record they are projected from.
 */
import { Schema } from "effect"
import { AppId, ExecutionId, UserId, WorkflowId, WorkspaceId } from "./Ids.js"

/** Execution status (SPEC §3). */
export const ExecutionStatus = Schema.Literal("queued", "running", "completed", "failed")
export type ExecutionStatus = typeof ExecutionStatus.Type

/** Kind of an output's value (DESIGN §3); `pending` until the output is produced. */
export const OutputType = Schema.Literal("pending", "text", "image", "video", "audio", "json")
export type OutputType = typeof OutputType.Type

/** Output status (DESIGN §3). */
export const OutputStatus = Schema.Literal("pending", "completed", "failed")
export type OutputStatus = typeof OutputStatus.Type

/**
 * A point in time on the wire: ISO 8601 in UTC (`2026-11-22T10:00:00.000Z`), a `Date` in code.
 * Decoding accepts only the UTC ISO form so that what comes back is what went out.
 */
export const Timestamp = Schema.transform(
  Schema.String.pipe(
    Schema.pattern(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,3})?Z$/, {
      message: () => "an ISO 8601 UTC timestamp such as 2026-11-22T10:00:00.000Z"
    })
  ),
  Schema.DateFromSelf.pipe(Schema.filter((d) => !Number.isNaN(d.getTime()))),
  {
    strict: true,
    decode: (s) => new Date(s),
    encode: (d) => d.toISOString()
  }
)

/** One output of an execution (SPEC §2.5). */
export const Output = Schema.Struct({
  id: Schema.String,
  label: Schema.String,
  type: OutputType,
  value: Schema.NullOr(Schema.String),
  status: OutputStatus,
  error: Schema.NullOr(Schema.String)
})
export type Output = typeof Output.Type

/** The polling response and webhook payload (SPEC §2.4, §4.5, §6.1). */
export const Execution = Schema.Struct({
  executionId: ExecutionId,
  workflowId: WorkflowId,
  status: ExecutionStatus,
  outputs: Schema.Array(Output),
  errorMessage: Schema.NullOr(Schema.String),
  startedAt: Schema.NullOr(Timestamp),
  completedAt: Schema.NullOr(Timestamp),
  createdAt: Timestamp
})
export type Execution = typeof Execution.Type

/** The start response (SPEC §4.4); `webhookUrl` is null when no webhook was given (DESIGN §3). */
export const StartedExecution = Schema.Struct({
  executionId: ExecutionId,
  workflowId: WorkflowId,
  status: Schema.Literal("queued"),
  webhookUrl: Schema.NullOr(Schema.String),
  outputs: Schema.Array(Output)
})
export type StartedExecution = typeof StartedExecution.Type

/**
 * What storage keeps of an execution. Times are epoch milliseconds read from `Clock`.
 * `inputs` are the validated inputs, defaults applied.
 */
export const ExecutionRecord = Schema.Struct({
  executionId: ExecutionId,
  workflowId: WorkflowId,
  appId: AppId,
  workspaceId: WorkspaceId,
  userId: UserId,
  status: ExecutionStatus,
  inputs: Schema.Record({ key: Schema.String, value: Schema.String }),
  outputs: Schema.Array(Output),
  errorMessage: Schema.NullOr(Schema.String),
  webhookUrl: Schema.NullOr(Schema.String),
  createdAt: Schema.Number,
  startedAt: Schema.NullOr(Schema.Number),
  completedAt: Schema.NullOr(Schema.Number)
})
export type ExecutionRecord = typeof ExecutionRecord.Type

const toDate = (ms: number | null): Date | null => (ms === null ? null : new Date(ms))

/** The polling view of a stored execution. */
export const toExecution = (record: ExecutionRecord): Execution => ({
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
export const toStartedExecution = (record: ExecutionRecord): StartedExecution => ({
  executionId: record.executionId,
  workflowId: record.workflowId,
  status: "queued",
  webhookUrl: record.webhookUrl,
  outputs: record.outputs
})
