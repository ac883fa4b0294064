/**
 * Migration 0007: what retention, the operator's listing and tracing need. Executions and webhook
 * deliveries keep the `traceparent` their trace continues from; finished executions are found by
 * completion time (retention), and a workspace's executions newest first (`executions list`).
 */
import { type Kysely, sql } from "kysely"

const statements = [
  `ALTER TABLE executions ADD COLUMN trace_parent TEXT`,
  `ALTER TABLE webhook_outbox ADD COLUMN trace_parent TEXT`,
  `CREATE INDEX executions_finished ON executions (completed_at) WHERE status IN ('completed', 'failed')`,
  `CREATE INDEX executions_workspace ON executions (workspace_id, seq)`
]

/** Adds the columns and the indexes. */
export const up = async (db: Kysely<unknown>): Promise<void> => {
  for (const statement of statements) await sql.raw(statement).execute(db)
}
