/**
 * Migration 0006: the rate limit slides (each counter also keeps the count of the window before
 * its current one), and the key revision: a counter that every change of `api_keys` (a revocation
 * above all) bumps, in the same transaction, through triggers. A server that caches keys in
 * memory reads the revision on every request, one indexed row, and drops its cache when it moved:
 * a key revoked by another process stops working at its next request.
 */
import { type Kysely, sql } from "kysely"

/** Adds `rate_limits.previous` and `key_revision` with its triggers. */
export const up = async (db: Kysely<unknown>): Promise<void> => {
  for (
    const statement of [
      `ALTER TABLE rate_limits ADD COLUMN previous INTEGER NOT NULL DEFAULT 0`,
      `CREATE TABLE key_revision (
        id INTEGER PRIMARY KEY NOT NULL CHECK (id = 1),
        revision INTEGER NOT NULL
      ) STRICT`,
      `INSERT INTO key_revision (id, revision) VALUES (1, 0)`,
      `CREATE TRIGGER api_keys_revision_update AFTER UPDATE ON api_keys
        BEGIN UPDATE key_revision SET revision = revision + 1 WHERE id = 1; END`,
      `CREATE TRIGGER api_keys_revision_delete AFTER DELETE ON api_keys
        BEGIN UPDATE key_revision SET revision = revision + 1 WHERE id = 1; END`
    ]
  ) await sql.raw(statement).execute(db)
}
