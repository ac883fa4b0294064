/**
 * The mapping between `ExecutionRecord` and a row of `executions`, for every dialect (see
 * `RowMapping` for why rows are mapped, not decoded).
 */
import { WebhookEvent } from "@appexec/api/Execution"
import type { ExecutionQueue } from "@appexec/core"
import { type Errors, ExecutionRecord } from "@appexec/core"
import { Either } from "effect"
import type { Selectable } from "kysely"
import { parseJson, status as checkStatus, trusted } from "./RowMapping.js"
import type { ExecutionsTable } from "./SqlTables.js"

/** A row of `executions` as read. */
export type ExecutionRow = Selectable<ExecutionsTable>

/**
 * Every column of `executions` by name, for the statements that read whole rows as prepared
 * statements (a prepared `*` would break when a later migration adds a column).
 */
export const executionColumns = [
  "seq",
  "execution_id",
  "workflow_id",
  "app_id",
  "workspace_id",
  "user_id",
  "status",
  "inputs",
  "outputs",
  "error_message",
  "webhook_url",
  "created_at",
  "started_at",
  "completed_at",
  "lease_worker",
  "lease_token",
  "lease_expires_at",
  "attempts",
  "claims",
  "cancel_requested_at",
  "trace_parent",
  "webhook_events",
  "priority",
  "queue_at"
] as const satisfies ReadonlyArray<keyof ExecutionsTable>

/** The record's columns (the queue columns are not part of the record). */
export const toColumns = (record: ExecutionRecord.ExecutionRecord) => ({
  execution_id: record.executionId,
  workflow_id: record.workflowId,
  app_id: record.appId,
  workspace_id: record.workspaceId,
  user_id: record.userId,
  status: record.status,
  inputs: JSON.stringify(record.inputs),
  outputs: JSON.stringify(record.outputs),
  error_message: record.errorMessage,
  webhook_url: record.webhookUrl,
  created_at: record.createdAt,
  started_at: record.startedAt,
  completed_at: record.completedAt,
  trace_parent: record.traceParent ?? null,
  webhook_events: record.webhookEvents?.join(",") ?? null,
  priority: record.priority ?? 0,
  queue_at: ExecutionRecord.queueAtOf(record)
})

const fields = ExecutionRecord.ExecutionRecord.fields
const readStatus = checkStatus(fields.status, "read execution")
const readEvent = checkStatus(WebhookEvent, "read execution")
const noEvents = Either.right(undefined)

/** The webhook events of a row, each name checked as a status is; none when the start gave none. */
const eventsOf = (
  text: string | null
): Either.Either<ReadonlyArray<WebhookEvent> | undefined, Errors.StorageError> =>
  text === null ? noEvents : Either.all(text.split(",").map(readEvent))

/**
 * The record a row holds (an `Either`, so also an `Effect`). Rows are written by `toColumns`
 * alone, from records the domain schema typed, so they are read back without decoding them
 * again: the ids keep their brands unchecked and the JSON columns are parsed, not validated.
 * Only what a column could not keep apart is checked: the status text and the webhook events.
 */
export const fromRow = (row: ExecutionRow): Either.Either<ExecutionRecord.ExecutionRecord, Errors.StorageError> =>
  Either.flatMap(
    Either.all([readStatus(row.status), eventsOf(row.webhook_events)]),
    ([status, webhookEvents]) =>
      Either.flatMap(
        parseJson(row.inputs, "read execution"),
        (inputs) =>
          Either.map(parseJson(row.outputs, "read execution"), (outputs) => ({
            executionId: fields.executionId.make(row.execution_id, trusted),
            workflowId: fields.workflowId.make(row.workflow_id, trusted),
            appId: fields.appId.make(row.app_id, trusted),
            workspaceId: fields.workspaceId.make(row.workspace_id, trusted),
            userId: fields.userId.make(row.user_id, trusted),
            status,
            // Written by `toColumns` from the record's own values (see above).
            inputs: inputs as ExecutionRecord.ExecutionRecord["inputs"],
            outputs: outputs as ExecutionRecord.ExecutionRecord["outputs"],
            errorMessage: row.error_message,
            webhookUrl: row.webhook_url,
            createdAt: row.created_at,
            startedAt: row.started_at,
            completedAt: row.completed_at,
            ...(row.trace_parent === null ? {} : { traceParent: row.trace_parent }),
            ...(webhookEvents === undefined ? {} : { webhookEvents }),
            ...(row.priority === 0 ? {} : { priority: row.priority }),
            // Every claim, absent until the first (`ExecutionRecord.attempt`, `Lease.attempt`).
            ...(row.claims === 0 ? {} : { attempt: row.claims })
          }))
      )
  )

/** The columns of `executions` a view reads: a poll's answer, and nothing else. */
export const viewColumns = [
  "execution_id",
  "workflow_id",
  "app_id",
  "workspace_id",
  "status",
  "outputs",
  "inputs",
  "error_message",
  "created_at",
  "started_at",
  "completed_at",
  "claims"
] as const satisfies ReadonlyArray<keyof ExecutionRow>

/** A row of the view's columns. */
export type ViewRow = Pick<ExecutionRow, typeof viewColumns[number]>

/**
 * The view a row holds. As with `fromRow`, what the store wrote is not decoded again: the outputs
 * and inputs stay the JSON text `toColumns` wrote; only the status is checked.
 */
export const viewOfRow = (row: ViewRow): Either.Either<ExecutionRecord.ExecutionView, Errors.StorageError> =>
  Either.map(readStatus(row.status), (status) => ({
    executionId: row.execution_id,
    workflowId: row.workflow_id,
    appId: row.app_id,
    workspaceId: row.workspace_id,
    status,
    outputsJson: row.outputs,
    inputsJson: row.inputs,
    errorMessage: row.error_message,
    createdAt: row.created_at,
    startedAt: row.started_at,
    completedAt: row.completed_at,
    attempt: row.claims
  }))

/** The lease a claimed row carries. */
export const leaseOf = (record: ExecutionRecord.ExecutionRecord, row: ExecutionRow): ExecutionQueue.Lease => ({
  executionId: record.executionId,
  workerId: row.lease_worker ?? "",
  token: row.lease_token ?? 0,
  attempt: row.claims,
  counted: row.attempts,
  expiresAt: row.lease_expires_at ?? 0
})

/**
 * The claims the rows stand for, in plain code (no step of the runtime per row); a row that
 * cannot be read fails the batch, as a read would.
 */
export const claimsOf = (
  rows: ReadonlyArray<ExecutionRow>
): Either.Either<ReadonlyArray<ExecutionQueue.Claim>, Errors.StorageError> => {
  const claims: Array<ExecutionQueue.Claim> = []
  for (const row of rows) {
    const execution = fromRow(row)
    if (Either.isLeft(execution)) return Either.left(execution.left)
    claims.push({ execution: execution.right, lease: leaseOf(execution.right, row) })
  }
  return Either.right(claims)
}
