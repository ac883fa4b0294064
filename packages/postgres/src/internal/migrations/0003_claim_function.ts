/**
 * Migration 0003: a claim in one round trip. `appexec_claim_executions` runs the claim loop of
 * `PostgresExecutionQueue` inside the server, so a worker claims a whole batch with one
 * statement instead of one statement per execution:
 *
 * - workspaces in turn from after `p_after` (in workspace-id order, starting over at the first
 *   workspace until a whole pass finds nothing more), oldest first within each, each row taken by
 *   `UPDATE … WHERE seq = (SELECT … LIMIT 1 FOR UPDATE SKIP LOCKED)`, so concurrent claimers lock
 *   different rows and never wait on each other;
 * - when the workspace just claimed from is the only one with claimable work, the rest of the
 *   batch comes from it in one `UPDATE … WHERE seq = ANY(ARRAY(SELECT … LIMIT n FOR UPDATE SKIP
 *   LOCKED))` (the array evaluates the locking subquery once, whatever the plan)
 *   (what the turns would take, one by one);
 * - with `p_start_at` (not null), a queued execution it takes starts in the same update
 *   (`running`, `started_at`), as `ClaimOptions.startAt` asks;
 * - the claimed rows in claim order. The caller resumes after the workspace of the last one when
 *   the batch is full; a batch that is not full ran out of work and ends a pass.
 *
 * Its commit is not waited for (`synchronous_commit = off` for its transaction alone): a claim
 * lost in a crash of the database leaves its executions claimable, as if never claimed, and the
 * first write of the run (fenced by the lease) flushes the claim before it.
 */
import { type Kysely, sql } from "kysely"

const claimable = (alias: string, now: string) =>
  `${alias}.status IN ('queued', 'running')
        AND (${alias}.lease_expires_at IS NULL OR ${alias}.lease_expires_at <= ${now})`

const lease = `claims = e.claims + 1, attempts = e.attempts + 1, lease_token = e.claims + 1,
        lease_worker = p_worker, lease_expires_at = p_expires_at,
        status = CASE WHEN p_start_at IS NOT NULL AND e.status = 'queued' THEN 'running' ELSE e.status END,
        started_at = CASE WHEN p_start_at IS NOT NULL AND e.status = 'queued' THEN p_start_at ELSE e.started_at END`

const statements = [
  `CREATE FUNCTION appexec_claim_executions(
    p_after text, p_limit integer, p_now bigint, p_worker text, p_expires_at bigint, p_start_at bigint
  ) RETURNS SETOF executions LANGUAGE plpgsql AS $$
  DECLARE
    v_after text := p_after;
    v_claimed integer := 0;
    v_passes integer := 0;
    v_this_pass integer := 0;
    v_bulk integer;
    v_row executions;
  BEGIN
    PERFORM set_config('synchronous_commit', 'off', true);
    WHILE v_claimed < p_limit LOOP
      UPDATE executions e SET ${lease}
      WHERE e.seq = (
        SELECT c.seq FROM executions c
        WHERE ${claimable("c", "p_now")} AND c.workspace_id > v_after
        ORDER BY c.workspace_id, c.seq
        LIMIT 1 FOR UPDATE SKIP LOCKED
      )
      RETURNING e.* INTO v_row;
      IF NOT FOUND THEN
        EXIT WHEN v_after = '' OR (v_passes > 0 AND v_this_pass = 0);
        v_passes := v_passes + 1;
        v_this_pass := 0;
        v_after := '';
        CONTINUE;
      END IF;
      RETURN NEXT v_row;
      v_claimed := v_claimed + 1;
      v_this_pass := v_this_pass + 1;
      v_after := v_row.workspace_id;
      IF v_claimed < p_limit
        AND NOT EXISTS (
          SELECT 1 FROM executions c WHERE ${claimable("c", "p_now")} AND c.workspace_id > v_after
        )
        AND NOT EXISTS (
          SELECT 1 FROM executions c WHERE ${claimable("c", "p_now")} AND c.workspace_id < v_after
        )
      THEN
        RETURN QUERY
          WITH taken AS (
            UPDATE executions e SET ${lease}
            WHERE e.seq = ANY(ARRAY(
              SELECT c.seq FROM executions c
              WHERE ${claimable("c", "p_now")} AND c.workspace_id = v_after
              ORDER BY c.seq
              LIMIT p_limit - v_claimed FOR UPDATE SKIP LOCKED
            ))
            RETURNING e.*
          )
          SELECT * FROM taken ORDER BY seq;
        GET DIAGNOSTICS v_bulk = ROW_COUNT;
        v_claimed := v_claimed + v_bulk;
        EXIT;
      END IF;
    END LOOP;
  END
  $$`
]

/** Creates the claim function. */
export const up = async (db: Kysely<unknown>): Promise<void> => {
  for (const statement of statements) await sql.raw(statement).execute(db)
}
