/**
 * Migration 0010: two indexes of `executions` that only repeated what `executions_workspace_status`
 * (0006: `workspace_id`, `status`, `seq`) answers are dropped, so every start, claim and save writes
 * two indexes fewer:
 * - `executions_queued`: a queued execution's position — the queued executions of its workspace
 *   before it — is the same range of `executions_workspace_status`;
 * - `executions_workspace`: a page of a workspace's executions whatever their status is the
 *   newest of each status along `executions_workspace_status`, merged (`SqlExecutionStore`).
 */
import { type Kysely, sql } from "kysely"

/** Drops the indexes. */
export const up = async (db: Kysely<unknown>): Promise<void> => {
  await sql`DROP INDEX executions_queued`.execute(db)
  await sql`DROP INDEX executions_workspace`.execute(db)
}
