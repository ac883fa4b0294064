/**
 * Migration 0013: `executions` loses its four foreign keys (to `apps`, `workflow_versions`,
 * `users` and `workspaces`). PostgreSQL checks a foreign key of each inserted row by locking the
 * row it names (`SELECT … FOR KEY SHARE`): every start locked the same four rows of its app,
 * workflow, user and workspace, and a lock taken by several transactions at once (two API
 * processes starting executions of one app) is a multixact, written to the row and to the WAL
 * each time. On the start path through two API processes (docs/performance.md), PostgreSQL's
 * CPU per start fell from ~230 µs to ~160 µs without them.
 *
 * Nothing is lost by it: appexec never deletes an app, a workflow version, a user or a workspace
 * (apps and workflow versions are added or updated, keys are revoked), and an execution is
 * inserted only after its app, workflow and key were read and checked in the same request. The foreign keys that
 * name `executions` (its logs, reports and webhook deliveries) stay, and so do SQLite's own.
 */
import { type Kysely, sql } from "kysely"

/** Drops the foreign keys (0001 named them after their columns; one already dropped by hand is passed over). */
export const up = async (db: Kysely<unknown>): Promise<void> => {
  await sql`
    ALTER TABLE executions
      DROP CONSTRAINT IF EXISTS executions_app_id_fkey,
      DROP CONSTRAINT IF EXISTS executions_workflow_id_fkey,
      DROP CONSTRAINT IF EXISTS executions_user_id_fkey,
      DROP CONSTRAINT IF EXISTS executions_workspace_id_fkey`.execute(db)
}
