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
  inputs: Execution.Inputs,
  outputs: Schema.Array(Execution.Output),
  errorMessage: Schema.NullOr(Schema.String),
  webhookUrl: Schema.NullOr(Schema.String),
  /**
   * The events the webhook receives, as the start gave them (`webhookEvents`, docs/webhooks.md#events),
   * in the order of `WEBHOOK_EVENTS`. Absent when the start gave none: the completion webhook alone,
   * with the interface's body (no `type`).
   */
  webhookEvents: Schema.optional(Schema.Array(Execution.WebhookEvent)),
  createdAt: Schema.Number,
  startedAt: Schema.NullOr(Schema.Number),
  completedAt: Schema.NullOr(Schema.Number),
  /**
   * The W3C `traceparent` of the span that accepted the execution, so the worker's run (in any
   * process) continues that trace. Absent on records made without one.
   */
  traceParent: Schema.optional(Schema.String),
  /**
   * The start's priority (`PRIORITY_MIN`…`PRIORITY_MAX`); absent: 0. A claim takes a workspace's
   * executions in `queueAtOf` order, so a higher priority goes first and age lifts a lower one.
   */
  priority: Schema.optional(Schema.Int),
  /**
   * How many times a worker claimed the execution, claims given back not counted: 1 for the
   * first worker, one more for each worker that takes it over after a lost lease. The queue keeps
   * it (`Lease.attempt`), stores fill it in when they read; `save` never writes it. Absent until
   * the first claim.
   */
  attempt: Schema.optional(Schema.Int)
})
export type ExecutionRecord = typeof ExecutionRecord.Type

/** The lowest and highest priority a start may ask for (docs/scaling.md#priorities). */
export { PRIORITY_MAX, PRIORITY_MIN } from "@appexec/api/Execution"
/** How much waiting one step of priority is worth: a priority of 2 goes before runs up to 2 minutes older. */
export const PRIORITY_STEP_MS = 60_000

/**
 * What a claim orders a workspace's queue by (epoch ms): the acceptance time less a minute per
 * step of priority. Age lifts priority: a run waits behind higher ones only for so long.
 */
export const queueAtOf = (record: Pick<ExecutionRecord, "createdAt" | "priority">): number =>
  record.createdAt - (record.priority ?? 0) * PRIORITY_STEP_MS

const toDate = (ms: number | null): Date | null => (ms === null ? null : new Date(ms))

/** The polling view of a stored execution. */
export const toExecution = (record: ExecutionRecord): Execution.Execution => ({
  executionId: record.executionId,
  workflowId: record.workflowId,
  appId: record.appId,
  status: record.status,
  outputs: record.outputs,
  inputs: record.inputs,
  errorMessage: record.errorMessage,
  startedAt: toDate(record.startedAt),
  completedAt: toDate(record.completedAt),
  createdAt: new Date(record.createdAt),
  attempt: record.attempt ?? 0
})

/** The start-response view of a freshly queued execution. */
export const toStartedExecution = (record: ExecutionRecord): Execution.StartedExecution => ({
  executionId: record.executionId,
  workflowId: record.workflowId,
  status: "queued",
  webhookUrl: record.webhookUrl,
  outputs: record.outputs
})

/**
 * The public part of a stored execution, as storage keeps it: what `GET /v1/executions/{id}`
 * answers, with the outputs and inputs still the JSON text the store wrote (`JSON.stringify` of
 * the record's), so that answering a poll parses and re-encodes nothing.
 */
export interface ExecutionView {
  readonly executionId: string
  readonly workflowId: string
  readonly appId: string
  readonly workspaceId: string
  readonly status: Execution.ExecutionStatus
  /** The outputs as stored: a JSON array of `Execution.Output`. */
  readonly outputsJson: string
  /** The inputs as stored: a JSON object of strings (`ExecutionRecord.inputs`). */
  readonly inputsJson: string
  readonly errorMessage: string | null
  readonly createdAt: number
  readonly startedAt: number | null
  readonly completedAt: number | null
  /** `ExecutionRecord.attempt`; 0 until the first claim. */
  readonly attempt: number
}

/** The view of a record in hand. */
export const viewOf = (record: ExecutionRecord): ExecutionView => ({
  executionId: record.executionId,
  workflowId: record.workflowId,
  appId: record.appId,
  workspaceId: record.workspaceId,
  status: record.status,
  outputsJson: JSON.stringify(record.outputs),
  inputsJson: JSON.stringify(record.inputs),
  errorMessage: record.errorMessage,
  createdAt: record.createdAt,
  startedAt: record.startedAt,
  completedAt: record.completedAt,
  attempt: record.attempt ?? 0
})

/**
 * The version of an execution's view (docs/api.md#live-executions): 0 while queued, 1 and one
 * more per settled output while running, the number of outputs and 2 once finished. It grows with
 * every change a client sees, so event ids can be built on it (`ExecutionReports.snapshotId`).
 */
export const versionOf = (
  status: Execution.ExecutionStatus,
  outputs: ReadonlyArray<{ readonly status: Execution.OutputStatus }>
): number => {
  switch (status) {
    case "queued":
      return 0
    case "running": {
      let settled = 0
      for (const output of outputs) if (output.status !== "pending") settled += 1
      return 1 + settled
    }
    default:
      return outputs.length + 2
  }
}

/** `versionOf` a view, whose outputs are JSON text. */
export const viewVersion = (view: ExecutionView): number =>
  view.status === "queued" ? 0 : versionOf(view.status, JSON.parse(view.outputsJson) as ReadonlyArray<Execution.Output>)

const isoJson = (ms: number | null) => (ms === null ? "null" : `"${new Date(ms).toISOString()}"`)

/**
 * The JSON of the polling view (`Execution` as its schema encodes it, field for field and in its
 * order), written from a view directly, with the `queuePosition` of a queued one when given. The
 * ids are the store's own UUIDs and the status one of the schema's literals; the outputs and
 * inputs are spliced in as stored; the error message is encoded.
 */
export const executionJson = (view: ExecutionView, queuePosition?: number, waitingFor?: string): string =>
  `{"executionId":"${view.executionId}","workflowId":"${view.workflowId}","appId":"${view.appId}",` +
  `"status":"${view.status}","outputs":${view.outputsJson},"inputs":${view.inputsJson},"errorMessage":${
    view.errorMessage === null ? "null" : JSON.stringify(view.errorMessage)
  },` +
  `"startedAt":${isoJson(view.startedAt)},"completedAt":${isoJson(view.completedAt)},` +
  `"createdAt":${isoJson(view.createdAt)},"attempt":${view.attempt}${
    queuePosition === undefined ? "" : `,"queuePosition":${queuePosition}`
  }${waitingFor === undefined ? "" : `,"waitingFor":${JSON.stringify(waitingFor)}`}}`
