/**
 * Migration 0014: what `appexec keys list` shows of a key. `hint_tail` keeps a key's last 4
 * characters, so a key is shown as the console shows it (`aex_Twbo…myLI`) and revoked by that
 * hint; `last_used_at` is when the key last authenticated a request (written at most once a
 * minute per process). Neither changes whether a key is valid, so writing them must not move the
 * key revision, which every process's key cache follows: the statement trigger of 0011 is made
 * again to fire on an update only when it sets a column that decides a key's validity or owner.
 */
import { type Kysely, sql } from "kysely"

const statements = [
  `ALTER TABLE api_keys ADD COLUMN hint_tail TEXT`,
  `ALTER TABLE api_keys ADD COLUMN last_used_at BIGINT`,
  `DROP TRIGGER api_keys_revision ON api_keys`,
  `CREATE TRIGGER api_keys_revision
    AFTER UPDATE OF api_key_id, workspace_id, user_id, hash, revoked_at OR DELETE OR TRUNCATE ON api_keys
    FOR EACH STATEMENT EXECUTE FUNCTION appexec_bump_key_revision()`
]

/** Adds the columns and narrows the trigger. */
export const up = async (db: Kysely<unknown>): Promise<void> => {
  for (const statement of statements) await sql.raw(statement).execute(db)
}
