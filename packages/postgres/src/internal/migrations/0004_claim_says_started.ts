/**
 * Migration 0004: the claim says which executions it started. `appexec_claim_executions` takes
 * the round robin of migration 0003 unchanged, but the start it writes comes from core
 * (`p_start_status`, `p_start_at`: the fields of the `Started` transition, `ClaimOptions.start`),
 * and each row it started is returned as the claim found it (its status and `started_at` as they
 * were before; every other column as the claim left it). A returned row that is still `queued`
 * while a start was given is one this claim started (`Claim.started`); core applies the
 * transition to it. Each row's status is read as it is locked, so no guess is made from times.
 */
import { type Kysely, sql } from "kysely"

const claimable = (alias: string, now: string) =>
  `${alias}.status IN ('queued', 'running')
        AND (${alias}.lease_expires_at IS NULL OR ${alias}.lease_expires_at <= ${now})`

const lease = `claims = e.claims + 1, attempts = e.attempts + 1, lease_token = e.claims + 1,
        lease_worker = p_worker, lease_expires_at = p_expires_at,
        status = CASE WHEN p_start_at IS NOT NULL AND e.status = 'queued' THEN p_start_status ELSE e.status END,
        started_at = CASE WHEN p_start_at IS NOT NULL AND e.status = 'queued' THEN p_start_at ELSE e.started_at END`

const statements = [
  `DROP FUNCTION appexec_claim_executions(text, integer, bigint, text, bigint, bigint)`,
  `CREATE FUNCTION appexec_claim_executions(
    p_after text, p_limit integer, p_now bigint, p_worker text, p_expires_at bigint,
    p_start_status text, p_start_at bigint
  ) RETURNS SETOF executions LANGUAGE plpgsql AS $$
  DECLARE
    v_after text := p_after;
    v_claimed integer := 0;
    v_passes integer := 0;
    v_this_pass integer := 0;
    v_seq bigint;
    v_was text;
    v_seqs bigint[];
    v_queued bigint[];
    v_row executions;
  BEGIN
    PERFORM set_config('synchronous_commit', 'off', true);
    WHILE v_claimed < p_limit LOOP
      SELECT c.seq, c.status INTO v_seq, v_was FROM executions c
        WHERE ${claimable("c", "p_now")} AND c.workspace_id > v_after
        ORDER BY c.workspace_id, c.seq
        LIMIT 1 FOR UPDATE SKIP LOCKED;
      IF NOT FOUND THEN
        EXIT WHEN v_after = '' OR (v_passes > 0 AND v_this_pass = 0);
        v_passes := v_passes + 1;
        v_this_pass := 0;
        v_after := '';
        CONTINUE;
      END IF;
      UPDATE executions e SET ${lease} WHERE e.seq = v_seq RETURNING e.* INTO v_row;
      IF p_start_at IS NOT NULL AND v_was = 'queued' THEN
        v_row.status := 'queued';
        v_row.started_at := NULL;
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
        SELECT array_agg(l.seq), coalesce(array_agg(l.seq) FILTER (WHERE l.status = 'queued'), '{}')
          INTO v_seqs, v_queued
          FROM (
            SELECT c.seq, c.status FROM executions c
            WHERE ${claimable("c", "p_now")} AND c.workspace_id = v_after
            ORDER BY c.seq
            LIMIT p_limit - v_claimed FOR UPDATE SKIP LOCKED
          ) l;
        IF v_seqs IS NOT NULL THEN
          FOR v_row IN
            WITH taken AS (
              UPDATE executions e SET ${lease} WHERE e.seq = ANY(v_seqs) RETURNING e.*
            )
            SELECT * FROM taken ORDER BY seq
          LOOP
            IF p_start_at IS NOT NULL AND v_row.seq = ANY(v_queued) THEN
              v_row.status := 'queued';
              v_row.started_at := NULL;
            END IF;
            RETURN NEXT v_row;
          END LOOP;
        END IF;
        EXIT;
      END IF;
    END LOOP;
  END
  $$`
]

/** Replaces the claim function. */
export const up = async (db: Kysely<unknown>): Promise<void> => {
  for (const statement of statements) await sql.raw(statement).execute(db)
}
