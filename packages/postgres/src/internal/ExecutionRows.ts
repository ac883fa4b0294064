/**
 * The mapping between `ExecutionRecord` and a row of `executions`.
 */
import { Errors, type ExecutionQueue, ExecutionRecord } from "@appexec/core"
import { Either, Schema } from "effect"
import type { Selectable } from "kysely"
import { decode, parseJson } from "./RowDecoding.js"
import type { ExecutionsTable } from "./Tables.js"

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
  "trace_parent"
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
  trace_parent: record.traceParent ?? null
})

const decodeRecord = decode(ExecutionRecord.ExecutionRecord, "read execution")

/** The record a row holds (an `Either`, so also an `Effect`). */
export const fromRow = (row: ExecutionRow): Either.Either<ExecutionRecord.ExecutionRecord, Errors.StorageError> =>
  Either.flatMap(
    parseJson(row.inputs, "read execution"),
    (inputs) =>
      Either.flatMap(parseJson(row.outputs, "read execution"), (outputs) =>
        decodeRecord({
          executionId: row.execution_id,
          workflowId: row.workflow_id,
          appId: row.app_id,
          workspaceId: row.workspace_id,
          userId: row.user_id,
          status: row.status,
          inputs,
          outputs,
          errorMessage: row.error_message,
          webhookUrl: row.webhook_url,
          createdAt: row.created_at,
          startedAt: row.started_at,
          completedAt: row.completed_at,
          ...(row.trace_parent === null ? {} : { traceParent: row.trace_parent }),
          // The queue's count, absent until the first claim (`ExecutionRecord.attempt`).
          ...(row.attempts === 0 ? {} : { attempt: row.attempts })
        }))
  )

/** The columns of `executions` a view reads. */
export const viewColumns = [
  "execution_id",
  "workflow_id",
  "workspace_id",
  "status",
  "outputs",
  "error_message",
  "created_at",
  "started_at",
  "completed_at",
  "attempts"
] as const satisfies ReadonlyArray<keyof ExecutionsTable>

const isStatus = Schema.is(ExecutionRecord.ExecutionRecord.fields.status)

/**
 * The view a row holds: the outputs stay the JSON text `toColumns` wrote (a `text` column, so
 * the same bytes); only the status is checked.
 */
export const viewOfRow = (
  row: Pick<ExecutionRow, typeof viewColumns[number]>
): Either.Either<ExecutionRecord.ExecutionView, Errors.StorageError> => {
  const status = row.status
  if (!isStatus(status)) {
    return Either.left(
      new Errors.StorageError({ operation: "read execution: decode row", cause: `unknown status '${status}'` })
    )
  }
  return Either.right({
    executionId: row.execution_id,
    workflowId: row.workflow_id,
    workspaceId: row.workspace_id,
    status,
    outputsJson: row.outputs,
    errorMessage: row.error_message,
    createdAt: row.created_at,
    startedAt: row.started_at,
    completedAt: row.completed_at,
    attempt: row.attempts
  })
}

/** The lease a claimed row carries. */
export const leaseOf = (record: ExecutionRecord.ExecutionRecord, row: ExecutionRow): ExecutionQueue.Lease => ({
  executionId: record.executionId,
  workerId: row.lease_worker ?? "",
  token: row.lease_token ?? 0,
  attempt: row.attempts,
  expiresAt: row.lease_expires_at ?? 0
})
