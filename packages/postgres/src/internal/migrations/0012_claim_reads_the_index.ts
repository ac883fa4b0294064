/**
 * Migration 0012: the claim reads the queue through its index whatever the table's statistics.
 * The claim function of 0004 asked whether any other workspace had claimable work with two
 * `NOT EXISTS (SELECT 1 FROM executions WHERE … workspace_id > $1)` (and `< $1`). Inside PL/pgSQL
 * those are prepared once per session, and after five calls PostgreSQL may keep a generic plan:
 * once the table has statistics (autovacuum's analyze, taken while a backlog is queued), that plan
 * is a sequential scan, which stops at the first match it expects to find soon. With one
 * workspace there is none, so every claim read the whole table twice: the bench's two-process
 * drain spent 420 µs of PostgreSQL's CPU per execution where it spent 190 before the analyze, and
 * a table of a million finished executions would have made every claim read a million rows.
 * Each check is now a lookup in workspace order with `LIMIT 1` (`appexec_other_workspace_claimable`),
 * whose only cheap plan is the partial index `executions_open_by_workspace`.
 *
 * The same statistics sent the rest of the batch (`workspace_id = $1 ORDER BY seq LIMIT n`) through
 * the primary key, in `seq` order from the oldest row of the table, finished ones included: it now
 * starts after the row the claim just took in that workspace (`seq > v_seq`; an older claimable row
 * there was locked by another claimer, which `SKIP LOCKED` skips all the same). In a test of
 * 2,000 rows, 1,500 finished, eight claims of four read 352 index entries and no table, where
 * 0004's read ~20,700 entries and the table eight times. The claim is otherwise 0004's, unchanged.
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
  // Each lookup in workspace order, so the only cheap plan is the index's, with or without
  // statistics: it stops at the first claimable row of another workspace, or finds the range empty.
  `CREATE FUNCTION appexec_other_workspace_claimable(p_workspace text, p_now bigint)
    RETURNS boolean LANGUAGE plpgsql STABLE AS $$
  BEGIN
    PERFORM 1 FROM executions c WHERE ${claimable("c", "p_now")} AND c.workspace_id > p_workspace
      ORDER BY c.workspace_id LIMIT 1;
    IF FOUND THEN RETURN true; END IF;
    PERFORM 1 FROM executions c WHERE ${claimable("c", "p_now")} AND c.workspace_id < p_workspace
      ORDER BY c.workspace_id LIMIT 1;
    RETURN FOUND;
  END
  $$`,
  `CREATE OR REPLACE FUNCTION appexec_claim_executions(
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
      IF v_claimed < p_limit AND NOT appexec_other_workspace_claimable(v_after, p_now) THEN
        SELECT array_agg(l.seq), coalesce(array_agg(l.seq) FILTER (WHERE l.status = 'queued'), '{}')
          INTO v_seqs, v_queued
          FROM (
            SELECT c.seq, c.status FROM executions c
            WHERE ${claimable("c", "p_now")} AND c.workspace_id = v_after AND c.seq > v_seq
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

/** Adds the lookup and replaces the claim function. */
export const up = async (db: Kysely<unknown>): Promise<void> => {
  for (const statement of statements) await sql.raw(statement).execute(db)
}
