/**
 * `SqlRunner` on the PostgreSQL pool: every query is awaited on `pg`, a `PreparedQuery` (fixed
 * text) as a named statement that each connection parses and plans once
 * (`PostgresClient.prepared`), any other as a plain one; writes are not grouped here (the hot
 * ones have their own batched statements); the dialect hooks are PostgreSQL's.
 */
import { PreparedQuery } from "@appexec/sql"
import { type SqlDialect } from "@appexec/sql/SqlDialect"
import { SqlRunner } from "@appexec/sql/SqlRunner"
import { Effect, Layer } from "effect"
import { type Compilable, sql } from "kysely"
import { PostgresClient } from "../PostgresClient.js"

/** PostgreSQL's hooks: `boolean`, `jsonb` attempts, search on the folded `search_text`, lists as arrays. */
export const dialect: SqlDialect = {
  name: "postgres",
  bool: (value) => value,
  search: {
    // Folded here with `toLowerCase` (all of Unicode, whatever the server's collation); name and
    // description on separate lines, so no match spans both.
    columns: (app) => ({ search_text: `${app.name}\n${app.description ?? ""}`.toLowerCase() }),
    matches: (needle) => (eb) => eb(eb.fn("strpos", ["search_text", eb.val(needle)]), ">", 0)
  },
  oneOf: (column, list) => sql`${sql.ref(column)} = any(${list}::text[])`,
  list: (values) => [...values],
  // `starts_with` rather than LIKE: no wildcard in a key needs escaping.
  startsWith: (column, prefix) => sql`starts_with(${sql.ref(column)}, ${prefix})`,
  greatest: (column, value) => sql<number>`greatest(${sql.ref(column)}, ${value})`,
  appendJson: (column, element) => sql`${sql.ref(column)} || jsonb_build_array(${element}::jsonb)`
}

/** The runner over the instance's pool. */
export const layer = Layer.effect(
  SqlRunner,
  Effect.map(PostgresClient, (client) => {
    const rows = <R>(operation: string, query: Compilable<R>) =>
      PreparedQuery.isPrepared(query)
        ? Effect.map(client.prepared(operation, query.compile()), (result) => result.rows)
        : client.execute(operation, async (db) => (await db.executeQuery(query)).rows)
    const run = (operation: string, query: Compilable<unknown>) =>
      PreparedQuery.isPrepared(query)
        ? Effect.map(client.prepared(operation, query.compile()), (result) => result.rowCount)
        : client.execute(operation, async (db) => Number((await db.executeQuery(query)).numAffectedRows ?? 0))
    return SqlRunner.of({
      builder: client.db,
      dialect,
      all: rows,
      first: (operation, query) => Effect.map(rows(operation, query), (found) => found[0]),
      run,
      write: run,
      transaction: (operation, statements) =>
        client.transaction(operation, async (trx) => {
          const changed: Array<number> = []
          for (const statement of statements) {
            changed.push(Number((await trx.executeQuery(statement)).numAffectedRows ?? 0))
          }
          return changed
        })
    })
  })
)
