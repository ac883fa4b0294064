/**
 * Migration 0019: a claim rewrites its executions' rows in place.
 * - `executions_open_by_workspace` is made again without `lease_expires_at`: a claim sets the
 *   lease columns alone, and once none of them is indexed PostgreSQL can keep a row's new version
 *   on its page with no new index entry (a HOT update) instead of one in each of the table's six
 *   indexes. The column answered no claim from the index anyway: the claim's test of the lease (no
 *   lease, or one run out) is an `OR`, checked on the row, and so is a count of live leases on a
 *   table whose rows change too often for an index-only scan.
 * - `executions` fills its pages by half (`fillfactor = 50`, for pages filled from now on): a claim
 *   takes a backlog's rows together, every row of a page in one transaction, and each new version
 *   must fit beside the old ones, which are freed only once the claim has committed. Less room
 *   leaves most claims' rows outside their page (80: about one in six in place).
 * - The claim function of 0018 (same arguments and result) returns the rest of a batch with
 *   `RETURN QUERY` instead of a loop over its rows.
 * - `executions_cancel_requested`, over the unfinished executions with a cancel requested: a
 *   worker's look for cancels to carry out (twice a second while it runs something) read every
 *   unfinished execution, a whole backlog, where it now reads the few with a request. Its key is
 *   `seq`, which no write changes, so claims stay in place.
 */
import { type Kysely, sql } from "kysely"

const claimable = (alias: string, now: string, workflows: string) =>
  `${alias}.status IN ('queued', 'running')
        AND (${alias}.lease_expires_at IS NULL OR ${alias}.lease_expires_at <= ${now})
        AND (${workflows} IS NULL OR ${alias}.workflow_id = ANY(${workflows}))`

const lease = `claims = e.claims + 1, attempts = e.attempts + 1, lease_token = e.claims + 1,
        lease_worker = p_worker, lease_expires_at = p_expires_at`

const statements = [
  `DROP INDEX executions_open_by_workspace`,
  `CREATE INDEX executions_open_by_workspace ON executions (workspace_id, queue_at, seq)
    WHERE status IN ('queued', 'running')`,
  `ALTER TABLE executions SET (fillfactor = 50)`,
  `CREATE INDEX executions_cancel_requested ON executions (seq)
    WHERE cancel_requested_at IS NOT NULL AND status IN ('queued', 'running')`,
  `CREATE OR REPLACE FUNCTION appexec_claim_executions(
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
          RETURN QUERY WITH taken AS (
              UPDATE executions e SET ${lease} WHERE e.seq = ANY(v_seqs) RETURNING e.*
            )
            SELECT * FROM taken ORDER BY queue_at, seq;
        END IF;
        EXIT;
      END IF;
    END LOOP;
  END
  $$`
]

/** Makes the open index again, sets the table's fillfactor, replaces the claim function's body, adds the cancel index. */
export const up = async (db: Kysely<unknown>): Promise<void> => {
  for (const statement of statements) await sql.raw(statement).execute(db)
}
