/**
 * Migration 0015: `media_stores`, the stores besides the database that the deployment kept media
 * in (`MediaStoreRegistry`): a process started with `--media s3://…` records its bucket, so that
 * every process reads media there and deletes them with their execution, whatever its own flags.
 * A row holds where the store is, never its credentials.
 */
import { type Kysely, sql } from "kysely"

/** Creates the table. */
export const up = async (db: Kysely<unknown>): Promise<void> => {
  await sql.raw(
    `CREATE TABLE media_stores (
      id TEXT PRIMARY KEY,
      uri TEXT NOT NULL,
      endpoint TEXT,
      region TEXT NOT NULL,
      added_at BIGINT NOT NULL
    )`
  ).execute(db)
}
