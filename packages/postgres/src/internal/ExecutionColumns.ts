/**
 * The columns an insert of executions writes, each with its PostgreSQL type, as the batched
 * inserts send them: one array parameter per column (`unnest`), so that a statement's text is
 * the same for every batch and each connection prepares it once.
 */
import type { ExecutionRecord } from "@appexec/core"
import { toColumns } from "@appexec/sql/ExecutionRows"
import { arrayLiteral } from "./ArrayLiterals.js"

/** The columns an insert writes, each with its PostgreSQL type. */
export const insertColumns = [
  ["execution_id", "text"],
  ["workflow_id", "text"],
  ["app_id", "text"],
  ["workspace_id", "text"],
  ["user_id", "text"],
  ["status", "text"],
  ["inputs", "text"],
  ["outputs", "text"],
  ["error_message", "text"],
  ["webhook_url", "text"],
  ["created_at", "bigint"],
  ["started_at", "bigint"],
  ["completed_at", "bigint"],
  ["trace_parent", "text"],
  ["webhook_events", "text"],
  ["priority", "integer"],
  ["queue_at", "bigint"]
] as const satisfies ReadonlyArray<readonly [keyof ReturnType<typeof toColumns>, string]>

/** The column names, comma-separated, in the order of `insertColumns`. */
export const columnNames = insertColumns.map(([column]) => column).join(", ")

/** `unnest` over the array parameters `$first…`, one per column, as `typed` `$n::type[]` list. */
export const arrayParameters = (first: number): string =>
  insertColumns.map(([, type], i) => `$${first + i}::${type}[]`).join(", ")

/**
 * The values of `records`, one array parameter per column of `insertColumns`, each written as
 * its array literal (`ArrayLiterals`) as node-postgres would write the array.
 */
export const columnArrays = (records: ReadonlyArray<ExecutionRecord.ExecutionRecord>): Array<string> => {
  const rows = records.map(toColumns)
  return insertColumns.map(([column]) => arrayLiteral(rows, (row) => row[column]))
}
