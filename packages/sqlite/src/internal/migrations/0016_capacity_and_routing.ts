/**
 * Migration 0016: capacity and routing (docs/scaling.md#pools-and-limits).
 * - `executions.priority` (the start's, −10…10, 0 by default) and `executions.queue_at`, the time a
 *   claim orders a workspace's queue by: `created_at` less a minute per step of priority, so a
 *   higher priority goes first and age lifts a lower one (nothing starves). The index over
 *   unfinished executions is ordered by it, then by acceptance (`seq`), within each workspace.
 * - `workspaces.max_running` and `workspaces.max_priority`: a workspace's cap on executions under
 *   live leases and the highest priority its keys may ask for (null: the instance's default).
 * - `processes.node_types`: the node types a process's worker runs (JSON array; null: no worker),
 *   so a queued execution no running worker can take says what it waits for.
 */
import { type Kysely, sql } from "kysely"

const statements = [
  `ALTER TABLE executions ADD COLUMN priority INTEGER NOT NULL DEFAULT 0`,
  `ALTER TABLE executions ADD COLUMN queue_at INTEGER NOT NULL DEFAULT 0`,
  `UPDATE executions SET queue_at = created_at`,
  `DROP INDEX executions_open_by_workspace`,
  `CREATE INDEX executions_open_by_workspace ON executions (workspace_id, queue_at, seq, lease_expires_at) WHERE status IN ('queued', 'running')`,
  `ALTER TABLE workspaces ADD COLUMN max_running INTEGER`,
  `ALTER TABLE workspaces ADD COLUMN max_priority INTEGER`,
  `ALTER TABLE processes ADD COLUMN node_types TEXT`
]

/** Adds the columns and orders the index by priority. */
export const up = async (db: Kysely<unknown>): Promise<void> => {
  for (const statement of statements) await sql.raw(statement).execute(db)
}
