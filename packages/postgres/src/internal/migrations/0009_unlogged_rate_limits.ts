/**
 * Migration 0009: `rate_limits` becomes an UNLOGGED table. Its counters are written on every
 * `/v1` request (grouped, `SqlRateLimitStore`) and only ever matter for the current minute and
 * the one before; as an unlogged table they write no WAL, so a statement that bumps them commits
 * without waiting for a disk flush (a transaction that wrote no WAL is not flushed at commit),
 * and the rate limit stops being one of the two flushes on the path of every start. The price:
 * after a crash of the database server (not of an appexec process) the counters start from zero,
 * as the in-memory counters of `appexec serve` on SQLite do when it restarts, and a standby does
 * not have them. Executions and everything else stay logged and flushed at every commit.
 */
import { type Kysely, sql } from "kysely"

/** Makes the table unlogged (rewritten once; it holds at most two windows of counters). */
export const up = async (db: Kysely<unknown>): Promise<void> => {
  await sql`ALTER TABLE rate_limits SET UNLOGGED`.execute(db)
}
