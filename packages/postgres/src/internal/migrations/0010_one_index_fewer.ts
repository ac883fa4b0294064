/**
 * Migration 0010: `executions_queued` is dropped. A queued execution's position — the queued
 * executions of its workspace before it — is the same range of `executions_workspace_status`
 * (0006: `workspace_id`, then `status = 'queued'`, then `seq` below its own), which every start,
 * claim and save keeps up to date anyway; the partial index only made each of them write one
 * index more.
 */
import { type Kysely, sql } from "kysely"

/** Drops the index. */
export const up = async (db: Kysely<unknown>): Promise<void> => {
  await sql`DROP INDEX executions_queued`.execute(db)
}
