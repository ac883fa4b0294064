/**
 * Migration 0018: capacity and routing (docs/scaling.md#pools-and-limits).
 * - `executions.priority` (the start's, −10…10, 0 by default) and `executions.queue_at`, the time a
 *   claim orders a workspace's queue by: `created_at` less a minute per step of priority, so a
 *   higher priority goes first and age lifts a lower one (nothing starves). The index over
 *   unfinished executions is ordered by it, then by acceptance (`seq`), within each workspace.
 * - `workspaces.max_running` and `workspaces.max_priority`: a workspace's cap on executions under
 *   live leases and the highest priority its keys may ask for (null: the instance's default).
 * - `processes.node_types`: the node types a process's worker runs (JSON array; null: no worker).
 * - A claim function of six arguments beside 0012's seven (which the previous release's processes
 *   still call during a rolling upgrade, docs/upgrading.md): it takes the workflow versions the
 *   claiming worker can run (`p_workflows`, null: all) and walks each workspace in `queue_at`
 *   order; the start arguments (unused since a claim writes the lease alone) are gone. It is
 *   0012's otherwise, and so is its lookup of other workspaces, now with `p_workflows` too.
 */
import { type Kysely, sql } from "kysely"

const claimable = (alias: string, now: string, workflows: string) =>
  `${alias}.status IN ('queued', 'running')
        AND (${alias}.lease_expires_at IS NULL OR ${alias}.lease_expires_at <= ${now})
        AND (${workflows} IS NULL OR ${alias}.workflow_id = ANY(${workflows}))`

const lease = `claims = e.claims + 1, attempts = e.attempts + 1, lease_token = e.claims + 1,
        lease_worker = p_worker, lease_expires_at = p_expires_at`

const statements = [
  `ALTER TABLE executions ADD COLUMN priority INTEGER NOT NULL DEFAULT 0`,
  `ALTER TABLE executions ADD COLUMN queue_at BIGINT NOT NULL DEFAULT 0`,
  `UPDATE executions SET queue_at = created_at`,
  `DROP INDEX executions_open_by_workspace`,
  `CREATE INDEX executions_open_by_workspace ON executions (workspace_id, queue_at, seq, lease_expires_at)
    WHERE status IN ('queued', 'running')`,
  `ALTER TABLE workspaces ADD COLUMN max_running INTEGER`,
  `ALTER TABLE workspaces ADD COLUMN max_priority INTEGER`,
  `ALTER TABLE processes ADD COLUMN node_types TEXT`,
  `CREATE FUNCTION appexec_other_workspace_claimable(p_workspace text, p_now bigint, p_workflows text[])
    RETURNS boolean LANGUAGE plpgsql STABLE AS $$
  BEGIN
    PERFORM 1 FROM executions c WHERE ${claimable("c", "p_now", "p_workflows")} AND c.workspace_id > p_workspace
      ORDER BY c.workspace_id LIMIT 1;
    IF FOUND THEN RETURN true; END IF;
    PERFORM 1 FROM executions c WHERE ${claimable("c", "p_now", "p_workflows")} AND c.workspace_id < p_workspace
      ORDER BY c.workspace_id LIMIT 1;
    RETURN FOUND;
  END
  $$`,
  `CREATE FUNCTION appexec_claim_executions(
    p_after text, p_limit integer, p_now bigint, p_worker text, p_expires_at bigint, p_workflows text[]
  ) RETURNS SETOF executions LANGUAGE plpgsql AS $$
  DECLARE
    v_after text := p_after;
    v_claimed integer := 0;
    v_passes integer := 0;
    v_this_pass integer := 0;
    v_seq bigint;
    v_queue_at bigint;
    v_seqs bigint[];
    v_row executions;
  BEGIN
    PERFORM set_config('synchronous_commit', 'off', true);
    WHILE v_claimed < p_limit LOOP
      SELECT c.seq, c.queue_at INTO v_seq, v_queue_at FROM executions c
        WHERE ${claimable("c", "p_now", "p_workflows")} AND c.workspace_id > v_after
        ORDER BY c.workspace_id, c.queue_at, c.seq
        LIMIT 1 FOR UPDATE SKIP LOCKED;
      IF NOT FOUND THEN
        EXIT WHEN v_after = '' OR (v_passes > 0 AND v_this_pass = 0);
        v_passes := v_passes + 1;
        v_this_pass := 0;
        v_after := '';
        CONTINUE;
      END IF;
      UPDATE executions e SET ${lease} WHERE e.seq = v_seq RETURNING e.* INTO v_row;
      RETURN NEXT v_row;
      v_claimed := v_claimed + 1;
      v_this_pass := v_this_pass + 1;
      v_after := v_row.workspace_id;
      IF v_claimed < p_limit AND NOT appexec_other_workspace_claimable(v_after, p_now, p_workflows) THEN
        SELECT array_agg(l.seq) INTO v_seqs
          FROM (
            SELECT c.seq FROM executions c
            WHERE ${claimable("c", "p_now", "p_workflows")} AND c.workspace_id = v_after
              AND (c.queue_at, c.seq) > (v_queue_at, v_seq)
            ORDER BY c.queue_at, c.seq
            LIMIT p_limit - v_claimed FOR UPDATE SKIP LOCKED
          ) l;
        IF v_seqs IS NOT NULL THEN
          FOR v_row IN
            WITH taken AS (
              UPDATE executions e SET ${lease} WHERE e.seq = ANY(v_seqs) RETURNING e.*
            )
            SELECT * FROM taken ORDER BY queue_at, seq
          LOOP
            RETURN NEXT v_row;
          END LOOP;
        END IF;
        EXIT;
      END IF;
    END LOOP;
  END
  $$`
]

/** Adds the columns, orders the index by priority and replaces the claim function. */
export const up = async (db: Kysely<unknown>): Promise<void> => {
  for (const statement of statements) await sql.raw(statement).execute(db)
}
