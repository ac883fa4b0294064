/**
 * Migration 0002: partial indexes that keep the hot queries of the queue and the outbox
 * proportional to the open work, not to the history: claiming looks only at unfinished
 * executions in acceptance order, dispatching only at pending deliveries by due time.
 */
import { type Kysely, sql } from "kysely"

const statements = [
  `CREATE INDEX executions_open ON executions (seq, lease_expires_at) WHERE status IN ('queued', 'running')`,
  `CREATE INDEX webhook_outbox_due ON webhook_outbox (next_attempt_at, created_at) WHERE status = 'pending'`
]

/** Creates the indexes. */
export const up = async (db: Kysely<unknown>): Promise<void> => {
  for (const statement of statements) await sql.raw(statement).execute(db)
}
