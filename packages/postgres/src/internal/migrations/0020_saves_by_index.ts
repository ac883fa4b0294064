/**
 * Migration 0020: a worker's batch of saves finds its rows through the index of `execution_id`.
 * - `appexec_save_executions` is the statement of a batch of saves (one array per column, a row of
 *   each per save), in a function whose settings rule out a hash or merge join: each save's row is
 *   found by an index lookup (a nested loop), whatever the table's size. The statement alone, with
 *   a batch of a thousand, let the planner read the whole table into a hash (on 12,000 rows, 11 ms
 *   of a 55 ms save), a cost that grows with the table.
 * - The outbox entries of the terminal saves come from the update's own `RETURNING`, with no join
 *   of the saved rows back to the input.
 * The statement before it stays valid: a previous release's worker (docs/upgrading.md) still
 * sends it during a rolling upgrade.
 */
import { type Kysely, sql } from "kysely"

const statements = [
  `CREATE FUNCTION appexec_save_executions(
    p_execution_ids text[], p_tokens bigint[], p_workers text[], p_statuses text[], p_outputs text[],
    p_errors text[], p_started_at bigint[], p_completed_at bigint[], p_delivery_ids text[],
    p_delivery_users text[], p_delivery_urls text[], p_delivery_statuses text[], p_delivery_next bigint[],
    p_delivery_attempts text[], p_delivery_created bigint[], p_delivery_traces text[], p_delivery_events text[]
  ) RETURNS SETOF text LANGUAGE sql
  SET enable_hashjoin = off SET enable_mergejoin = off AS $$
    WITH saved AS (
      UPDATE executions e SET
        status = i.status, outputs = i.outputs, error_message = i.error_message,
        started_at = i.started_at, completed_at = i.completed_at,
        lease_worker = CASE WHEN i.status IN ('completed', 'failed') THEN NULL ELSE e.lease_worker END,
        lease_token = CASE WHEN i.status IN ('completed', 'failed') THEN NULL ELSE e.lease_token END,
        lease_expires_at = CASE WHEN i.status IN ('completed', 'failed') THEN NULL ELSE e.lease_expires_at END
      FROM unnest(
        p_execution_ids, p_tokens, p_workers, p_statuses, p_outputs, p_errors, p_started_at, p_completed_at,
        p_delivery_ids, p_delivery_users, p_delivery_urls, p_delivery_statuses, p_delivery_next,
        p_delivery_attempts, p_delivery_created, p_delivery_traces, p_delivery_events
      ) AS i(
        execution_id, lease_token, lease_worker, status, outputs, error_message, started_at, completed_at,
        delivery_id, delivery_user_id, delivery_url, delivery_status, delivery_next_attempt_at,
        delivery_attempts, delivery_created_at, delivery_trace_parent, delivery_event
      )
      WHERE e.execution_id = i.execution_id AND e.lease_token = i.lease_token AND e.lease_worker = i.lease_worker
      RETURNING e.execution_id, i.delivery_id, i.delivery_user_id, i.delivery_url, i.delivery_status,
        i.delivery_next_attempt_at, i.delivery_attempts, i.delivery_created_at, i.delivery_trace_parent,
        i.delivery_event
    ), outbox AS (
      INSERT INTO webhook_outbox (
        delivery_id, execution_id, user_id, url, status, next_attempt_at, attempts, created_at, trace_parent, event
      )
      SELECT delivery_id, execution_id, delivery_user_id, delivery_url, delivery_status, delivery_next_attempt_at,
        delivery_attempts::jsonb, delivery_created_at, delivery_trace_parent, delivery_event
      FROM saved WHERE delivery_id IS NOT NULL
    )
    SELECT execution_id FROM saved
  $$`
]

/** Creates the save function. */
export const up = async (db: Kysely<unknown>): Promise<void> => {
  for (const statement of statements) await sql.raw(statement).execute(db)
}
