/**
 * The hooks of one SQL dialect: what the dialect-neutral queries of this package cannot write the
 * same way for SQLite and PostgreSQL. Everything else is one kysely query for both. (The claim
 * statements, write batching and migrations differ too, and stay whole in each adapter.)
 */
import type { AppStore } from "@appexec/core"
import type { Expression, ExpressionBuilder, RawBuilder, SqlBool } from "kysely"
import type { Tables } from "./SqlTables.js"

/** The dialect hooks a runner carries (`SqlRunner.dialect`). */
export interface SqlDialect {
  /** Which dialect, for messages. */
  readonly name: "sqlite" | "postgres"
  /** A boolean as its column stores it (SQLite: 0/1, PostgreSQL: `boolean`). */
  readonly bool: (value: boolean) => SqlBool
  /**
   * App search: the extra columns an app row stores for it (PostgreSQL folds name and description
   * into `search_text` on write; SQLite folds them in the query), and the condition that the
   * app's name or description contains `needle` (already folded with `toLowerCase`), as a plain
   * substring test, case-insensitive in all of Unicode, with no LIKE wildcards.
   */
  readonly search: {
    readonly columns: (app: AppStore.AppRecord) => { readonly search_text?: string }
    readonly matches: (needle: string) => (eb: ExpressionBuilder<Tables, "apps">) => Expression<SqlBool>
  }
  /**
   * That text `column` is one of a list of any length, bound as one parameter (`list(values)`),
   * so one prepared statement serves any number of values (SQLite: `json_each` of a JSON array,
   * PostgreSQL: `= any(text[])`).
   */
  readonly oneOf: (column: string, list: unknown) => RawBuilder<SqlBool>
  /** The parameter `oneOf` reads, for `values`. */
  readonly list: (values: ReadonlyArray<string>) => unknown
  /** That text `column` starts with `prefix`, with no LIKE wildcards (and the key index where the dialect can). */
  readonly startsWith: (column: string, prefix: string) => RawBuilder<SqlBool>
  /** The larger of the number in `column` and `value` (SQLite: `max(a, b)`, PostgreSQL: `greatest`). */
  readonly greatest: (column: string, value: unknown) => RawBuilder<number>
  /** The JSON array `column` with the JSON text `element` appended, in place. */
  readonly appendJson: (column: string, element: unknown) => RawBuilder<string>
}
