/**
 * The port the dialect-neutral stores of this package run their queries through: each adapter
 * implements it over its own client — SQLite synchronously on better-sqlite3 with cached
 * prepared statements, PostgreSQL by awaiting `pg` (named statements for `PreparedQuery`s).
 * Queries are kysely queries built on `builder`, which compiles them for the dialect and never
 * runs them itself; driver failures become `StorageError` in the runner.
 */
import type { Errors } from "@appexec/core"
import { Context, type Effect } from "effect"
import type { Compilable, Kysely } from "kysely"
import type { SqlDialect } from "./SqlDialect.js"
import type { Tables } from "./SqlTables.js"

/** Runs compiled queries on one database; `operation` names the query in a `StorageError`. */
export class SqlRunner extends Context.Tag("@appexec/sql/SqlRunner")<
  SqlRunner,
  {
    /** The query builder of the dialect (used to build and compile, never to execute). */
    readonly builder: Kysely<Tables>
    /** The hooks where the dialect differs. */
    readonly dialect: SqlDialect
    /** Every row the query returns. */
    readonly all: <R>(operation: string, query: Compilable<R>) => Effect.Effect<ReadonlyArray<R>, Errors.StorageError>
    /** The first row the query returns, if any. */
    readonly first: <R>(operation: string, query: Compilable<R>) => Effect.Effect<R | undefined, Errors.StorageError>
    /** Runs a statement in autocommit mode; the number of rows it changed. */
    readonly run: (operation: string, query: Compilable<unknown>) => Effect.Effect<number, Errors.StorageError>
    /**
     * Runs a statement that may share its commit with the writes that arrive with it (SQLite's
     * group commit); as durable as `run` when it completes. The number of rows it changed.
     */
    readonly write: (operation: string, query: Compilable<unknown>) => Effect.Effect<number, Errors.StorageError>
    /** Runs the statements in order in one transaction; a failure rolls back all. The rows each changed. */
    readonly transaction: (
      operation: string,
      statements: ReadonlyArray<Compilable<unknown>>
    ) => Effect.Effect<ReadonlyArray<number>, Errors.StorageError>
  }
>() {}
