/**
 * Migration 0017: `processes`, each process of the deployment while it runs (`ProcessRegistry`,
 * docs/operations.md#the-fleet): written at its start, its heartbeat and lease end updated on the
 * lease-renewal schedule, deleted as it stops; a dead process's row is pruned later.
 */
import { type Kysely, sql } from "kysely"

/** Creates the table. */
export const up = async (db: Kysely<unknown>): Promise<void> => {
  await sql.raw(
    `CREATE TABLE processes (
      process_id TEXT PRIMARY KEY,
      name TEXT NOT NULL,
      role TEXT NOT NULL,
      version TEXT NOT NULL,
      started_at BIGINT NOT NULL,
      heartbeat_at BIGINT NOT NULL,
      expires_at BIGINT NOT NULL
    )`
  ).execute(db)
}
