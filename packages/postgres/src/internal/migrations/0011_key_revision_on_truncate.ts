/**
 * Migration 0011: a `TRUNCATE` of `api_keys` moves the key revision too. 0008's statement trigger
 * bumps it on `UPDATE` and `DELETE` (a revocation), and left out `TRUNCATE`, which fires no row or
 * `DELETE` trigger: an operator emptying the table by hand would have left every process serving
 * its cached keys. The trigger is made again with `TRUNCATE` (as `apps_revision` has had since 0008).
 */
import { type Kysely, sql } from "kysely"

const statements = [
  `DROP TRIGGER api_keys_revision ON api_keys`,
  `CREATE TRIGGER api_keys_revision AFTER UPDATE OR DELETE OR TRUNCATE ON api_keys
    FOR EACH STATEMENT EXECUTE FUNCTION appexec_bump_key_revision()`
]

/** Makes the trigger again, with `TRUNCATE`. */
export const up = async (db: Kysely<unknown>): Promise<void> => {
  for (const statement of statements) await sql.raw(statement).execute(db)
}
