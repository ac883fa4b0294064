/**
 * Migration 0012: what `appexec keys list` shows of a key. `hint_tail` keeps a key's last 4
 * characters, so a key is shown as the console shows it (`aex_Twbo…myLI`) and revoked by that
 * hint; `last_used_at` is when the key last authenticated a request (written at most once a
 * minute per process). Neither changes whether a key is valid, so writing them must not move the
 * key revision, which every process's key cache follows: the update trigger of 0006 is made
 * again to fire only when a column that decides a key's validity or owner changes.
 */
import { type Kysely, sql } from "kysely"

/** Adds the columns and narrows the update trigger. */
export const up = async (db: Kysely<unknown>): Promise<void> => {
  for (
    const statement of [
      `ALTER TABLE api_keys ADD COLUMN hint_tail TEXT`,
      `ALTER TABLE api_keys ADD COLUMN last_used_at INTEGER`,
      `DROP TRIGGER api_keys_revision_update`,
      `CREATE TRIGGER api_keys_revision_update
        AFTER UPDATE OF api_key_id, workspace_id, user_id, hash, revoked_at ON api_keys
        BEGIN UPDATE key_revision SET revision = revision + 1 WHERE id = 1; END`
    ]
  ) await sql.raw(statement).execute(db)
}
