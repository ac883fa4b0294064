/**
 * Migration 0005: claims take workspaces in turn, oldest first within each, so the index over
 * unfinished executions is ordered by workspace, then acceptance order; it carries the lease end,
 * so finding the next claimable execution of a workspace, and counting a workspace's live leases
 * (the per-workspace cap), reads the index alone. It replaces `executions_open`.
 */
import { type Kysely, sql } from "kysely"

const statements = [
  `CREATE INDEX executions_open_by_workspace ON executions (workspace_id, seq, lease_expires_at) WHERE status IN ('queued', 'running')`,
  `DROP INDEX executions_open`
]

/** Replaces the index. */
export const up = async (db: Kysely<unknown>): Promise<void> => {
  for (const statement of statements) await sql.raw(statement).execute(db)
}
