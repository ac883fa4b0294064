/**
 * Migration 0008: the key and app revisions.
 *
 * The key revision, as SQLite's 0006 keeps it: one row that every update or
 * deletion of `api_keys` (a revocation above all) bumps in the same transaction, through a
 * statement trigger. A server that caches keys in memory reads the revision instead of looking
 * its key up, and drops its cache when the revision moved: a key revoked by another process stops
 * working once a read of the revision that began after the revocation committed answers. The
 * function keeps the schema it was made in (`SET search_path FROM CURRENT`), so the trigger bumps
 * this schema's row whatever the search path of the connection that revokes.
 *
 * The app revision: one row that every write of `apps` bumps in its transaction, so a process
 * keeps the apps it read while it stays put (`PostgresAppStore`), as SQLite keeps them while
 * `PRAGMA data_version` does.
 */
import { type Kysely, sql } from "kysely"

const statements = [
  `CREATE TABLE key_revision (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    revision BIGINT NOT NULL
  )`,
  `INSERT INTO key_revision (id, revision) VALUES (1, 0)`,
  `CREATE FUNCTION appexec_bump_key_revision() RETURNS trigger
    LANGUAGE plpgsql
    SET search_path FROM CURRENT
    AS $$
    BEGIN
      UPDATE key_revision SET revision = revision + 1 WHERE id = 1;
      RETURN NULL;
    END
    $$`,
  `CREATE TRIGGER api_keys_revision AFTER UPDATE OR DELETE ON api_keys
    FOR EACH STATEMENT EXECUTE FUNCTION appexec_bump_key_revision()`,
  `CREATE TABLE app_revision (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    revision BIGINT NOT NULL
  )`,
  `INSERT INTO app_revision (id, revision) VALUES (1, 0)`,
  `CREATE FUNCTION appexec_bump_app_revision() RETURNS trigger
    LANGUAGE plpgsql
    SET search_path FROM CURRENT
    AS $$
    BEGIN
      UPDATE app_revision SET revision = revision + 1 WHERE id = 1;
      RETURN NULL;
    END
    $$`,
  `CREATE TRIGGER apps_revision AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON apps
    FOR EACH STATEMENT EXECUTE FUNCTION appexec_bump_app_revision()`
]

/** Creates the tables, their rows and the triggers. */
export const up = async (db: Kysely<unknown>): Promise<void> => {
  for (const statement of statements) await sql.raw(statement).execute(db)
}
