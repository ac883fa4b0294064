/**
 * Migration 0017: `executions_cancel_requested`, over the unfinished executions with a cancel
 * requested. A worker looks for the cancels of its runs twice a second while it runs something
 * (`SqlExecutionQueue.cancelRequested`); without it that look read every unfinished execution,
 * a whole backlog, where it now reads the few with a request. PostgreSQL has it from 0019.
 */
import { type Kysely, sql } from "kysely"

/** Adds the index. */
export const up = async (db: Kysely<unknown>): Promise<void> => {
  await sql.raw(
    `CREATE INDEX executions_cancel_requested ON executions (seq) WHERE cancel_requested_at IS NOT NULL AND status IN ('queued', 'running')`
  ).execute(db)
}
