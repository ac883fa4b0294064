/**
 * Migration 0004: cancellation and idempotent starts. An execution remembers when its cancel was
 * requested (`executions.cancel_requested_at`), for the worker that holds it; a start's
 * `Idempotency-Key` is kept per workspace with a digest of its request until it expires.
 */
import { type Kysely, sql } from "kysely"

/** Adds `executions.cancel_requested_at` and the table `idempotency_keys`. */
export const up = async (db: Kysely<unknown>): Promise<void> => {
  await sql.raw(`ALTER TABLE executions ADD COLUMN cancel_requested_at INTEGER`).execute(db)
  await sql
    .raw(
      `CREATE TABLE idempotency_keys (
        workspace_id TEXT NOT NULL,
        key TEXT NOT NULL,
        fingerprint TEXT NOT NULL,
        execution_id TEXT NOT NULL,
        expires_at INTEGER NOT NULL,
        PRIMARY KEY (workspace_id, key)
      ) WITHOUT ROWID`
    )
    .execute(db)
  await sql.raw(`CREATE INDEX idempotency_keys_expiry ON idempotency_keys (expires_at)`).execute(db)
}
