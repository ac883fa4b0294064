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
 *   leaves most claims' rows outside their page (80: one in five in place at most).
 * - `executions_cancel_requested`, over the unfinished executions with a cancel requested: a
 *   worker's look for cancels to carry out (twice a second while it runs something) read every
 *   unfinished execution, a whole backlog, where it now reads the few with a request. Its key is
 *   `seq`, which no write changes, so claims stay in place.
 */
import { type Kysely, sql } from "kysely"

const statements = [
  `DROP INDEX executions_open_by_workspace`,
  `CREATE INDEX executions_open_by_workspace ON executions (workspace_id, queue_at, seq)
    WHERE status IN ('queued', 'running')`,
  `ALTER TABLE executions SET (fillfactor = 50)`,
  `CREATE INDEX executions_cancel_requested ON executions (seq)
    WHERE cancel_requested_at IS NOT NULL AND status IN ('queued', 'running')`
]

/** Makes the open index again, sets the table's fillfactor and adds the cancel index. */
export const up = async (db: Kysely<unknown>): Promise<void> => {
  for (const statement of statements) await sql.raw(statement).execute(db)
}
