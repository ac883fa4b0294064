/**
 * Migration 0007: the secrets an operator manages (`appexec secrets set`), one row per name and
 * scope: `workspace_id` is the workspace's id, or '' for the whole instance. `sealed` holds the
 * value sealed with the master key for its name and scope, never the value itself. (The table
 * `secrets` of 0001 is another thing: random keys the processes of a deployment share.)
 */
import { type Kysely, sql } from "kysely"

const statements = [
  `CREATE TABLE operator_secrets (
    name TEXT NOT NULL,
    workspace_id TEXT NOT NULL,
    sealed TEXT NOT NULL,
    updated_at BIGINT NOT NULL,
    PRIMARY KEY (name, workspace_id)
  )`
]

/** Creates the table. */
export const up = async (db: Kysely<unknown>): Promise<void> => {
  for (const statement of statements) await sql.raw(statement).execute(db)
}
