/**
 * `SqlRunner` on the SQLite connection: every query runs synchronously on better-sqlite3 through
 * the connection's cache of prepared statements (`SqliteClient.execute`), writes that may share a
 * commit join the group commit (`SqliteClient.batched`), and the dialect hooks are SQLite's.
 */
import type { SqlDialect } from "@appexec/sql/SqlDialect"
import { SqlRunner } from "@appexec/sql/SqlRunner"
import { Effect, Layer } from "effect"
import { sql } from "kysely"
import { FOLD, SqliteClient } from "../SqliteClient.js"

/** SQLite's hooks: 0/1 booleans, JSON text, search folded in the query, lists as JSON arrays. */
const dialect: SqlDialect = {
  name: "sqlite",
  bool: (value) => (value ? 1 : 0),
  search: {
    columns: () => ({}),
    // `instr(fold(…))` is a plain substring test, case-insensitive in all of Unicode, with no LIKE wildcards.
    matches: (needle) => (eb) =>
      eb.or([
        eb(eb.fn("instr", [eb.fn(FOLD, ["name"]), eb.val(needle)]), ">", 0),
        eb(eb.fn("instr", [eb.fn(FOLD, ["description"]), eb.val(needle)]), ">", 0)
      ])
  },
  oneOf: (column, list) => sql`${sql.ref(column)} in (select value from json_each(${list}))`,
  list: (values) => JSON.stringify(values),
  // A range on the key rather than LIKE: no wildcard in a key needs escaping, and the index applies.
  startsWith: (column, prefix) => sql`(${sql.ref(column)} >= ${prefix} and ${sql.ref(column)} < ${`${prefix}\uffff`})`,
  greatest: (column, value) => sql<number>`max(${sql.ref(column)}, ${value})`,
  appendJson: (column, element) => sql`json_insert(${sql.ref(column)}, '$[#]', json(${element}))`
}

/** The runner over the instance's connection. */
export const layer = Layer.effect(
  SqlRunner,
  Effect.map(SqliteClient, (client) =>
    SqlRunner.of({
      builder: client.builder,
      dialect,
      all: (operation, query) => client.execute(operation, (c) => c.all(query)),
      first: (operation, query) => client.execute(operation, (c) => c.get(query)),
      run: (operation, query) => client.execute(operation, (c) => c.run(query)),
      write: (operation, query) => client.batched(operation, (c) => c.run(query)),
      transaction: (operation, statements) =>
        client.transaction(operation, (c) => statements.map((statement) => c.run(statement)))
    }))
)
