/**
 * Migration 0009: the execution list and webhook redelivery. A workspace's executions are paged
 * newest first by status (`executions_workspace_status`) or by app (`executions_workspace_app`),
 * each read backwards along its index as `executions_workspace` is without a filter; a delivery
 * armed again for one attempt says so (`webhook_outbox.redelivery`, 0/1).
 */
import { type Kysely, sql } from "kysely"

const statements = [
  `CREATE INDEX executions_workspace_status ON executions (workspace_id, status, seq)`,
  `CREATE INDEX executions_workspace_app ON executions (workspace_id, app_id, seq)`,
  `ALTER TABLE webhook_outbox ADD COLUMN redelivery INTEGER NOT NULL DEFAULT 0 CHECK (redelivery IN (0, 1))`
]

/** Creates the indexes and adds the column. */
export const up = async (db: Kysely<unknown>): Promise<void> => {
  for (const statement of statements) await sql.raw(statement).execute(db)
}
