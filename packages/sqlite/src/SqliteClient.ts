/**
 * The one SQLite connection of an appexec instance: opened with WAL, a busy timeout and foreign
 * keys, migrated on open, closed in a finalizer.
 *
 * Queries are built and compiled with kysely (the better-sqlite3 dialect's compiler) and run
 * synchronously on better-sqlite3 through a cache of prepared statements; hot paths compile
 * their query once (`internal/PreparedQuery`) and only bind values per call. Every operation —
 * a statement, or a whole `BEGIN IMMEDIATE … COMMIT` transaction — runs to its end in one
 * synchronous step, so no other fiber's statement can fall inside a
 * transaction and no lock is held across an event-loop turn. Driver exceptions become
 * `StorageError` here; `SQLITE_BUSY` (another process holds the write lock for longer than the
 * busy timeout) is retried with backoff before it becomes one.
 */
import { Errors } from "@appexec/core"
import type { Tables } from "@appexec/sql/SqlTables"
import type Database from "better-sqlite3"
import { Context, Duration, Effect, Either, Layer, Schedule } from "effect"
import { type Compilable, Kysely } from "kysely"
import { chmodSync, closeSync, existsSync, mkdirSync, openSync } from "node:fs"
import { createRequire } from "node:module"
import { dirname } from "node:path"
import { ImmediateSqliteDialect } from "./internal/ImmediateDialect.js"
import * as LogWriteBack from "./internal/LogWriteBack.js"
import * as SqliteMigrations from "./SqliteMigrations.js"

/** How to open the database. */
export interface Options {
  /** Path of the database file (its folder is created when missing); `:memory:` for a private in-memory database. */
  readonly filename: string
  /** How long a statement waits for another process's write lock before `SQLITE_BUSY` (default 5,000 ms). */
  readonly busyTimeoutMs?: number
  /**
   * `normal` (default): a commit survives a crash of the process; a crash of the machine may
   * lose the last commits, never consistency. `full`: every commit is flushed to disk first.
   */
  readonly synchronous?: "normal" | "full"
  /** Apply pending migrations on open (default true). */
  readonly migrate?: boolean
}

/** Synchronous access to the connection inside one operation. */
export interface Connection {
  /** Every row the query returns. */
  readonly all: <R>(query: Compilable<R>) => ReadonlyArray<R>
  /** The first row the query returns, if any. */
  readonly get: <R>(query: Compilable<R>) => R | undefined
  /** Runs a statement that returns no rows; the number of rows it changed. */
  readonly run: (query: Compilable<unknown>) => number
}

/** The connection of an appexec instance. */
export class SqliteClient extends Context.Tag("@appexec/sqlite/SqliteClient")<
  SqliteClient,
  {
    /** The query builder (never used to execute). */
    readonly builder: Kysely<Tables>
    /** Runs `f` alone on the connection (statements in autocommit mode). */
    readonly execute: <A>(operation: string, f: (connection: Connection) => A) => Effect.Effect<A, Errors.StorageError>
    /** Runs `f` alone on the connection inside `BEGIN IMMEDIATE … COMMIT`; a failure rolls back. */
    readonly transaction: <A>(
      operation: string,
      f: (connection: Connection) => A
    ) => Effect.Effect<A, Errors.StorageError>
    /**
     * Group commit: runs `f` in the transaction shared by every write that arrives in the same turn
     * of the event loop, and completes once that transaction is committed. A write that throws
     * fails alone: the group is then run again with a savepoint per write, so `f` may run twice
     * and should change nothing but the database (the claim's round-robin position is the one
     * exception: run twice, it moves on one turn more). A write is as durable as with
     * `transaction`; many writes share one commit.
     */
    readonly batched: <A>(operation: string, f: (connection: Connection) => A) => Effect.Effect<A, Errors.StorageError>
  }
>() {}

/** Name of the SQL function that lower-cases text the way `String.prototype.toLowerCase` does. */
export const FOLD = "appexec_fold"

/** Whether a driver error means that another connection holds a lock. */
export const isBusy = (cause: unknown): boolean => {
  const code = typeof cause === "object" && cause !== null && "code" in cause ? cause.code : undefined
  return typeof code === "string" && (code.startsWith("SQLITE_BUSY") || code.startsWith("SQLITE_LOCKED"))
}

const isBusyError = (error: Errors.StorageError) => isBusy(error.cause)

/** Backoff for `SQLITE_BUSY` after the busy timeout: 5 ms doubling up to 250 ms, jittered, 40 times. */
const busySchedule = Schedule.exponential(Duration.millis(5)).pipe(
  Schedule.modifyDelay((d) => Duration.min(d, Duration.millis(250))),
  Schedule.jittered,
  Schedule.intersect(Schedule.recurs(40))
)

const STATEMENT_CACHE_SIZE = 256

/**
 * Pages the write-ahead log grows to before a commit copies them back into the database file (a
 * checkpoint, which flushes both files to disk). SQLite's default is 1,000 (4 MB): under a steady
 * stream of executions that is a checkpoint every few dozen commits, each stalling the event loop
 * on two disk flushes, and copying again the same few pages (the tails of the tables and indexes)
 * that the commits in between rewrote. At 10,000 (40 MB) there are a tenth as many flushes and
 * each page is copied once per checkpoint however often it was rewritten. Durability is the same:
 * a commit is in the log either way; a crash only means a longer log to read at the next open.
 */
const WAL_AUTOCHECKPOINT_PAGES = 10_000

/**
 * The connection's page cache, in KiB (32 MiB). SQLite's default is 2 MiB: less than the tails of
 * `executions` and its indexes that every start, claim and save touches once the table holds some
 * tens of thousands of rows, so pages that were just written are read back from the operating
 * system's cache, a system call and a copy each. Pages are allocated as they are used: a small
 * database costs no more memory than before.
 */
export const PAGE_CACHE_KIB = 32 * 1024

/** A row read in raw mode as the object better-sqlite3 would have made (a later column of a name wins). */
const rowOf = (columns: ReadonlyArray<string>, values: ReadonlyArray<unknown>): Record<string, unknown> => {
  const row: Record<string, unknown> = {}
  for (let i = 0; i < columns.length; i++) row[columns[i]!] = values[i]
  return row
}

const load = createRequire(import.meta.url)
let driver: typeof Database | undefined

/** better-sqlite3, loaded when the first database opens rather than at import. */
const loadDriver = (): typeof Database => (driver ??= load("better-sqlite3") as typeof Database)

/**
 * Makes the database file, and its `-wal` and `-shm` files when present, readable and writable by
 * the owner only (0600); a new file is created so. SQLite creates the `-wal` and `-shm` files with
 * the database file's mode, so they follow. The folder of a new file is created when missing (the
 * owner's only, 0700).
 */
const restrictFiles = (filename: string) => {
  if (!existsSync(filename)) {
    mkdirSync(dirname(filename), { recursive: true, mode: 0o700 })
    closeSync(openSync(filename, "a", 0o600))
  }
  for (const file of [filename, `${filename}-wal`, `${filename}-shm`]) {
    if (existsSync(file)) chmodSync(file, 0o600)
  }
}

const open = (options: Options) =>
  Effect.try({
    try: () => {
      if (options.filename !== ":memory:" && options.filename !== "") restrictFiles(options.filename)
      const db = new (loadDriver())(options.filename)
      try {
        db.pragma(`busy_timeout = ${Math.max(0, Math.trunc(options.busyTimeoutMs ?? 5_000))}`)
        if (options.filename !== ":memory:") {
          db.pragma("journal_mode = WAL")
          db.pragma(`wal_autocheckpoint = ${WAL_AUTOCHECKPOINT_PAGES}`)
        }
        db.pragma(`cache_size = -${PAGE_CACHE_KIB}`)
        db.pragma(`synchronous = ${options.synchronous === "full" ? "FULL" : "NORMAL"}`)
        db.pragma("foreign_keys = ON")
        // Case folding as JavaScript does it (all of Unicode), for search; SQLite's lower() folds ASCII only.
        db.function(
          FOLD,
          { deterministic: true },
          (text: unknown) => (typeof text === "string" ? text.toLowerCase() : "")
        )
        return db
      } catch (cause) {
        db.close()
        throw cause
      }
    },
    catch: (cause) => new Errors.StorageError({ operation: `open ${options.filename}`, cause })
  })

/** Opens, configures and migrates the database; closes it when the scope closes. */
export const make = (options: Options) =>
  Effect.gen(function*() {
    const db = yield* Effect.acquireRelease(open(options), (db) => Effect.sync(() => db.close()))
    const writeBack = yield* Effect.acquireRelease(
      Effect.sync(() => LogWriteBack.make(options.filename, options.synchronous ?? "normal")),
      (writeBack) => Effect.sync(writeBack.close)
    )
    /** A cached statement, and for one that returns rows, its column names (it reads in raw mode). */
    interface Prepared {
      readonly statement: Database.Statement
      readonly columns: ReadonlyArray<string> | undefined
    }
    const statements = new Map<string, Prepared>()
    const prepared = (sql: string): Prepared => {
      const cached = statements.get(sql)
      if (cached !== undefined) return cached
      const statement = db.prepare(sql)
      // Rows are read as arrays and made into objects here: better-sqlite3 makes each row's object
      // through V8's API, a property and a name lookup at a time, at about twice the cost.
      const columns = statement.reader ? statement.raw(true).columns().map((column) => column.name) : undefined
      if (statements.size >= STATEMENT_CACHE_SIZE) statements.delete(statements.keys().next().value!)
      const entry = { statement, columns }
      statements.set(sql, entry)
      return entry
    }
    const prepare = (sql: string): Database.Statement => prepared(sql).statement
    // kysely runs migrations through its dialect; its `close` is ours to call, not the dialect's.
    const builder = new Kysely<Tables>({
      dialect: new ImmediateSqliteDialect({ database: { prepare: (sql) => db.prepare(sql), close: () => {} } })
    })
    if (options.migrate !== false) {
      yield* Effect.tryPromise({
        try: () => SqliteMigrations.migrateTo(builder as Kysely<unknown>),
        catch: (cause) => new Errors.StorageError({ operation: "migrate", cause })
      }).pipe(
        Effect.flatMap(({ error }) =>
          error === undefined
            ? Effect.void
            : Effect.fail(new Errors.StorageError({ operation: "migrate", cause: error }))
        ),
        // Two processes opening a new file at once race to create the migration tables.
        Effect.retry({ schedule: Schedule.spaced(Duration.millis(50)), times: 5 })
      )
    }

    const connection: Connection = {
      all: <R>(query: Compilable<R>) => {
        const { sql, parameters } = query.compile()
        const { columns, statement } = prepared(sql)
        const values = statement.all(parameters) as Array<ReadonlyArray<unknown>>
        const rows = new Array<R>(values.length)
        for (let i = 0; i < values.length; i++) rows[i] = rowOf(columns!, values[i]!) as R
        return rows
      },
      get: <R>(query: Compilable<R>) => {
        const { sql, parameters } = query.compile()
        const { columns, statement } = prepared(sql)
        const values = statement.get(parameters) as ReadonlyArray<unknown> | undefined
        return values === undefined ? undefined : rowOf(columns!, values) as R
      },
      run: (query) => {
        const { sql, parameters } = query.compile()
        return prepare(sql).run(parameters).changes
      }
    }
    const begin = () => prepare("BEGIN IMMEDIATE").run()
    const commit = () => {
      prepare("COMMIT").run()
      writeBack.committed()
    }
    const rollback = () => {
      if (db.inTransaction) prepare("ROLLBACK").run()
    }
    const savepoint = () => prepare("SAVEPOINT appexec_write").run()
    const releaseSavepoint = () => prepare("RELEASE appexec_write").run()
    const rollbackSavepoint = () => {
      prepare("ROLLBACK TO appexec_write").run()
      prepare("RELEASE appexec_write").run()
    }
    const inTransaction = <A>(f: (connection: Connection) => A): A => {
      begin()
      try {
        const result = f(connection)
        commit()
        return result
      } catch (cause) {
        rollback()
        throw cause
      }
    }

    // `f` is synchronous, so it runs to its end before any other fiber runs: no two operations
    // can interleave on the connection and no semaphore is needed.
    const execute = <A>(operation: string, f: (connection: Connection) => A): Effect.Effect<A, Errors.StorageError> =>
      // One step when it succeeds, which is nearly always: a read is a few microseconds, and the
      // effect around it should not cost more. The retry schedule is set up only when the lock
      // was busy.
      Effect.suspend(() => {
        try {
          return Effect.succeed(f(connection))
        } catch (cause) {
          const error = new Errors.StorageError({ operation, cause })
          if (!isBusy(cause)) return Effect.fail(error)
          const once = Effect.try({
            try: () => f(connection),
            catch: (cause) => new Errors.StorageError({ operation, cause })
          })
          return Effect.retry(once, { schedule: busySchedule, while: isBusyError })
        }
      })
    const transaction = <A>(operation: string, f: (connection: Connection) => A) =>
      execute(operation, () => inTransaction(f))

    // Group commit: writes wait for the next turn of the event loop, then share one transaction.
    interface Pending {
      readonly operation: string
      readonly f: (connection: Connection) => unknown
      readonly resume: (result: Either.Either<unknown, Errors.StorageError>) => void
    }
    let pending: Array<Pending> = []
    let scheduled: ReturnType<typeof setImmediate> | undefined
    type Results = Array<Either.Either<unknown, Errors.StorageError>>
    /**
     * Runs a group in one transaction. Optimistically first, each write straight after the other:
     * writes nearly never throw, and a savepoint each would cost two statements per write. When
     * one throws, the transaction is rolled back and the group runs again with each write in a
     * savepoint of its own (`isolated`), so that it fails alone and the others commit. Each write
     * of such a group runs twice: what it does outside the database must bear that.
     */
    const runGroup = (group: ReadonlyArray<Pending>, isolated: boolean): Results | undefined => {
      const results: Results = []
      try {
        begin()
        for (const write of group) {
          if (!isolated) {
            try {
              results.push(Either.right(write.f(connection)))
            } catch {
              rollback()
              return undefined
            }
            continue
          }
          savepoint()
          try {
            results.push(Either.right(write.f(connection)))
            releaseSavepoint()
          } catch (cause) {
            rollbackSavepoint()
            results.push(Either.left(new Errors.StorageError({ operation: write.operation, cause })))
          }
        }
        commit()
        return results
      } catch (cause) {
        rollback()
        return group.map((write) => Either.left(new Errors.StorageError({ operation: write.operation, cause })))
      }
    }
    const flush = () => {
      scheduled = undefined
      const group = pending
      pending = []
      const results = runGroup(group, false) ?? runGroup(group, true)!
      group.forEach((write, i) => write.resume(results[i]!))
    }
    yield* Effect.addFinalizer(() =>
      Effect.sync(() => {
        if (scheduled !== undefined) clearImmediate(scheduled)
        if (pending.length > 0) flush()
      })
    )
    const batched = <A>(operation: string, f: (connection: Connection) => A) =>
      Effect.async<A, Errors.StorageError>((resume) => {
        pending.push({
          operation,
          f,
          resume: (result) => {
            const typed = result as Either.Either<A, Errors.StorageError>
            // A group that found the lock busy is retried write by write, with the backoff of `execute`.
            resume(Either.isLeft(typed) && isBusyError(typed.left) ? transaction(operation, f) : typed)
          }
        })
        if (scheduled === undefined) scheduled = setImmediate(flush)
      })

    return SqliteClient.of({ builder, execute, transaction, batched })
  })

/** The connection as a layer; the database closes with the layer. */
export const layer = (options: Options): Layer.Layer<SqliteClient, Errors.StorageError> =>
  Layer.scoped(SqliteClient, make(options))
