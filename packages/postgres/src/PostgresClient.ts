/**
 * The connection pool of an appexec instance on PostgreSQL: a `pg` pool (its size, statement
 * timeout and TLS set by the operator), every connection in the instance's schema, migrated on
 * open, closed in a finalizer.
 *
 * Queries are built with kysely (its Postgres dialect over the pool) and awaited as effects;
 * driver exceptions become `StorageError` here. Times are epoch milliseconds in `bigint` columns,
 * read back as JavaScript numbers (exact up to 2^53). The pool reconnects by itself: a connection
 * that drops fails the statement it was running and is replaced on the next one.
 */
import { type DatabasePool, Errors } from "@appexec/core"
import { SqlMigrations } from "@appexec/sql"
import type { Tables } from "@appexec/sql/SqlTables"
import { Context, Duration, Effect, Layer, Schedule } from "effect"
import { type CompiledQuery, Kysely, PostgresDialect } from "kysely"
import type { ConnectionOptions } from "node:tls"
import type pg from "pg"
import { loadPg } from "./internal/Driver.js"
import * as PostgresMigrations from "./PostgresMigrations.js"

/** How to reach and use the database. */
export interface Options {
  /** `postgres://user:password@host:port/database?sslmode=…` (libpq-style URL, as `pg` reads it). */
  readonly connectionString: string
  /**
   * The schema appexec's tables live in (default `public`), created when missing. Several
   * instances can share one database in schemas of their own. Lower-case letters, digits and `_`.
   */
  readonly schema?: string
  /** Connections of this process's pool (default 10); one more is held for `LISTEN`. */
  readonly poolSize?: number
  /** Longest a statement may run before the server cancels it (default: no limit). */
  readonly statementTimeout?: Duration.DurationInput
  /** Longest to wait for a new connection (default 10 seconds). */
  readonly connectTimeout?: Duration.DurationInput
  /**
   * TLS: `true` verifies the server against the system's certificate authorities; an object is
   * handed to `tls.connect` (`ca`, `cert`, `key`, `rejectUnauthorized`, …). Default: whatever the
   * URL says (`sslmode`), else no TLS.
   */
  readonly ssl?: boolean | ConnectionOptions
  /** `application_name` the server shows for these connections (default `appexec`). */
  readonly applicationName?: string
  /**
   * Apply pending migrations on open (default true). When false, a database that lacks migrations
   * fails the open, naming `appexec migrate`; a database a newer appexec migrated fails it either way.
   */
  readonly migrate?: boolean
}

/** The pool of an appexec instance. */
export class PostgresClient extends Context.Tag("@appexec/postgres/PostgresClient")<
  PostgresClient,
  {
    /** The query builder over the pool. */
    readonly db: Kysely<Tables>
    /** The schema appexec's tables live in. */
    readonly schema: string
    /** Settings for a connection of its own (the `LISTEN` connection), as the pool's connections have. */
    readonly connectionConfig: pg.ClientConfig
    /** Runs `f` on the pool (each statement in autocommit mode). */
    readonly execute: <A>(
      operation: string,
      f: (db: Kysely<Tables>) => Promise<A>
    ) => Effect.Effect<A, Errors.StorageError>
    /**
     * Runs one statement of fixed shape as a named (prepared) statement: each connection of the
     * pool parses and plans it once, then only binds and executes it. For the hot statements
     * (claims, saves, renewals, inserts), whose text never varies with their values; the
     * statement lists its columns, so a column added by a later migration changes no result.
     */
    readonly prepared: <R>(
      operation: string,
      query: CompiledQuery<R>
    ) => Effect.Effect<{ readonly rows: ReadonlyArray<R>; readonly rowCount: number }, Errors.StorageError>
    /** Runs `f` in one transaction (`READ COMMITTED`); a failure rolls back. */
    readonly transaction: <A>(
      operation: string,
      f: (trx: Kysely<Tables>) => Promise<A>
    ) => Effect.Effect<A, Errors.StorageError>
    /** The migrations this open applied (none when the database was up to date). */
    readonly migrated: ReadonlyArray<string>
    /** The pool's connections now (`DatabasePool`: the metrics' `appexec_db_pool_*`). */
    readonly poolStats: Effect.Effect<DatabasePool.PoolStats>
  }
>() {}

/** The channel that `executions` inserts notify (in the insert's own statement), for `schema`. */
export const workChannel = (schema: string) => `appexec_work.${schema}`

/** The channel that a new due webhook of a process with no dispatcher notifies, for `schema`. */
export const webhookChannel = (schema: string) => `appexec_webhooks.${schema}`

/**
 * The channel on which a process tells the others which executions have news for their event
 * streams (`ExecutionReports.announce`), for `schema`: the payload is execution ids joined by commas.
 */
export const liveChannel = (schema: string) => `appexec_live.${schema}`

/** Whether `url` names a PostgreSQL database (`postgres://` or `postgresql://`). */
export const isPostgresUrl = (url: string): boolean => /^postgres(ql)?:\/\//i.test(url)

/**
 * A plain lower-case name short enough that the longest channel named after it
 * (`appexec_webhooks.<schema>`) stays within PostgreSQL's 63 bytes: a longer channel name makes
 * `pg_notify`, and with it the insert that notifies, fail.
 */
const SCHEMA = /^[a-z_][a-z0-9_]{0,45}$/

const INT8 = 20
const NUMERIC = 1700

/** `bigint` (and `count(*)`) as JavaScript numbers; everything else as `pg` parses it. */
const types: pg.CustomTypesConfig = {
  getTypeParser: ((oid: number, format?: "text" | "binary") =>
    oid === INT8 || oid === NUMERIC
      ? (value: string) => Number(value)
      : loadPg().types.getTypeParser(oid, format ?? "text")) as pg.CustomTypesConfig["getTypeParser"]
}

/** The `pg` settings of one connection. */
export const connectionConfig = (options: Options): pg.ClientConfig => {
  const schema = options.schema ?? "public"
  const statementTimeout = options.statementTimeout === undefined
    ? undefined
    : Duration.toMillis(Duration.decode(options.statementTimeout))
  return {
    connectionString: options.connectionString,
    ...(options.ssl === undefined ? {} : { ssl: options.ssl }),
    application_name: options.applicationName ?? "appexec",
    connectionTimeoutMillis: Duration.toMillis(Duration.decode(options.connectTimeout ?? "10 seconds")),
    keepAlive: true,
    // Every connection works in the instance's schema.
    options: `-c search_path=${schema}`,
    ...(statementTimeout === undefined ? {} : {
      statement_timeout: statementTimeout,
      // A connection that stops answering (a lost network) fails its statement a little later.
      query_timeout: statementTimeout + 5_000
    }),
    types
  }
}

/** A name for the statement `text`, the same in every process (FNV-1a of the text). */
const statementName = (text: string) => {
  let hash = 0x811c9dc5
  for (let i = 0; i < text.length; i++) hash = Math.imul(hash ^ text.charCodeAt(i), 0x01000193)
  return `appexec_${(hash >>> 0).toString(36)}_${text.length.toString(36)}`
}

const storageError = (operation: string) => (cause: unknown) => new Errors.StorageError({ operation, cause })

/** Opens the pool and migrates the schema; the pool ends when the scope closes. */
export const make = (options: Options) =>
  Effect.gen(function*() {
    const schema = options.schema ?? "public"
    if (!SCHEMA.test(schema)) {
      return yield* new Errors.StorageError({
        operation: "open",
        cause: `schema '${schema}' is not a plain lower-case name of at most 46 characters`
      })
    }
    const config = connectionConfig(options)
    const poolMax = Math.max(1, Math.trunc(options.poolSize ?? 10))
    const pool = yield* Effect.acquireRelease(
      Effect.sync(() => {
        const pool = new (loadPg().Pool)({
          ...config,
          max: poolMax,
          // Connections stay open while idle: a worker that waited a minute claims without a new handshake.
          idleTimeoutMillis: 0
        })
        // An idle connection that drops is removed from the pool; without a listener the error
        // would end the process.
        pool.on("error", () => {})
        // So must a connection that drops while it is checked out (a claim or a renewal under
        // way when the database goes away): `pg` fails its queries and also emits `error` on the
        // client, which the pool listens to only while the connection is idle. The query's own
        // failure is the one reported; the pool discards the dead connection when it comes back.
        pool.on("connect", (connection) => void connection.on("error", () => {}))
        return pool
      }),
      (pool) => Effect.promise(() => pool.end().catch(() => undefined))
    )
    const db = new Kysely<Tables>({ dialect: new PostgresDialect({ pool }) })

    const migrated = yield* PostgresMigrations.upgrade(
      db as unknown as Kysely<unknown>,
      schema,
      options.migrate !== false
    ).pipe(
      // Processes opening a new database at once race to create the schema and the migration tables.
      Effect.retry({
        schedule: Schedule.spaced(Duration.millis(100)),
        times: 5,
        while: (error) => !SqlMigrations.isRefusal(error)
      })
    )

    const execute = <A>(operation: string, f: (db: Kysely<Tables>) => Promise<A>) =>
      Effect.tryPromise({ try: () => f(db), catch: storageError(operation) })
    const names = new Map<string, string>()
    const prepared = <R>(operation: string, query: CompiledQuery<R>) =>
      Effect.tryPromise({
        try: async () => {
          let name = names.get(query.sql)
          if (name === undefined) names.set(query.sql, name = statementName(query.sql))
          const result = await pool.query<R & pg.QueryResultRow>({
            name,
            text: query.sql,
            values: [...query.parameters]
          })
          return { rows: result.rows, rowCount: result.rowCount ?? 0 }
        },
        catch: storageError(operation)
      })
    const transaction = <A>(operation: string, f: (trx: Kysely<Tables>) => Promise<A>) =>
      Effect.tryPromise({ try: () => db.transaction().execute(f), catch: storageError(operation) })

    const poolStats = Effect.sync((): DatabasePool.PoolStats => ({
      inUse: pool.totalCount - pool.idleCount,
      idle: pool.idleCount,
      waiting: pool.waitingCount,
      max: poolMax
    }))

    return PostgresClient.of({
      db,
      schema,
      connectionConfig: config,
      execute,
      prepared,
      transaction,
      migrated,
      poolStats
    })
  })

/** The pool as a layer; it ends with the layer. */
export const layer = (options: Options): Layer.Layer<PostgresClient, Errors.StorageError> =>
  Layer.scoped(PostgresClient, make(options))
