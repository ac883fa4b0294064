/**
 * The PostgreSQL side of a drain, the same for both queues: a database each, the transaction that
 * holds the work until the workers run, the count of what is left, the server's statistics.
 */
import { Duration, Effect } from "effect"
import pg from "pg"
import * as PostgresServer from "../servers/postgres.js"

/** Wall-clock time in milliseconds with a fraction, comparable with `Date.now()` of other processes. */
export const wallNow = () => performance.timeOrigin + performance.now()

let databases = 0

/** A fresh database on `server`; its URL. */
export const database = (server: PostgresServer.Server) =>
  Effect.promise(async () => {
    const name = `graphile_bench_${++databases}`
    await PostgresServer.withClient(server.url, async (client) => {
      await client.query(`CREATE DATABASE ${name}`)
      // Calls of appexec's claim function are counted (pg_stat_user_functions).
      await client.query(`ALTER DATABASE ${name} SET track_functions = 'pl'`)
    })
    const url = new URL(server.url)
    url.pathname = `/${name}`
    return url.href
  })

/** A connection of its own, closed with the scope. */
export const connection = (url: string) =>
  Effect.acquireRelease(
    Effect.promise(async () => {
      const client = new pg.Client({ connectionString: url })
      await client.connect()
      return client
    }),
    (client) => Effect.promise(() => client.end())
  )

/**
 * Transactions committed in the database so far (the server's statistics, which each backend
 * flushes within a second of its commits).
 */
export const commits = (client: pg.Client) =>
  Effect.map(
    Effect.promise(() =>
      client.query<{ n: string }>("SELECT xact_commit AS n FROM pg_stat_database WHERE datname = current_database()")
    ),
    ({ rows }) => Number(rows[0]!.n)
  )

/** The commits of the drain in the database (read once the statistics are flushed); excludes the counting's own. */
export const commitsSince = (client: pg.Client, before: number, counted: number) =>
  Effect.zipRight(
    Effect.sleep(Duration.millis(1_500)),
    // Never below 0: a process that stopped before flushing its statistics leaves them short.
    Effect.map(commits(client), (after) => Math.max(0, after - before - counted))
  )

/**
 * The question of a timed drain, for both queues alike: is anything left of `rows` (a table and
 * its condition)? It answers 1 or 0 from the first row its index holds, where a count would read
 * every row left every 10 ms, and so take from the server the CPU the drain it measures needs.
 */
export const anyLeft = (rows: string) => `SELECT count(*) AS n FROM (SELECT 1 FROM ${rows} LIMIT 1) AS left_over`

/** Waits, asking `left` every 10 ms, until it answers 0; the time it did. */
export const drained = (client: pg.Client, left: string) =>
  Effect.gen(function*() {
    for (let asked = 1;; asked++) {
      const { rows } = yield* Effect.promise(() => client.query<{ n: string }>(left))
      if (Number(rows[0]!.n) === 0) return { end: wallNow(), asked }
      yield* Effect.sleep(Duration.millis(10))
    }
  })

/**
 * The connection that counts what is left: it reads through indexes (`enable_seqscan` off), so
 * that a count every 10 ms does not read the whole table once its statistics are taken.
 */
export const counting = (url: string) =>
  Effect.tap(connection(url), (client) => Effect.promise(() => client.query("SET enable_seqscan = off")))

/**
 * Takes the statistics of `table` before a drain, for both queues alike: a table in service has
 * them (autovacuum's analyze), and a plan that reads a whole table shows only with them.
 */
export const analyze = (client: pg.Client, table: string) => Effect.promise(() => client.query(`ANALYZE ${table}`))

/** A transaction of its own on `url` that has locked the rows `lock` selects; rolled back with the scope if not before. */
export const hold = (url: string, lock: string) =>
  Effect.tap(connection(url), (client) =>
    Effect.promise(async () => {
      await client.query("BEGIN")
      await client.query(lock)
    }))

/** Ends the hold of `holder`, then notifies `channel` (as an insert would) to wake the idle workers. */
export const release = (holder: pg.Client, channel: string, payload: string) =>
  Effect.promise(async () => {
    await holder.query("ROLLBACK")
    await holder.query("SELECT pg_notify($1, $2)", [channel, payload])
  })

/** What one drain measured. */
export interface Drain {
  readonly perSecond: number
  /** CPU per job of the worker processes (µs), one entry per process. */
  readonly workerCpu: ReadonlyArray<number>
  /** Of which their main threads (µs), where measured (appexec's worker processes). */
  readonly mainThreadCpu?: ReadonlyArray<number> | undefined
  readonly serverCpu: number
  /** Transactions committed per job (claims, completions, renewals, notifications, all of them). */
  readonly commits: number
  /** Claim statements per job, where they are counted (appexec's claim function). */
  readonly claims?: number | undefined
  /** Autovacuum and autoanalyze runs of appexec's `executions` table so far (warm-up and drain). */
  readonly maintenance?: { readonly vacuums: number; readonly analyzes: number } | undefined
}

/**
 * With `APPEXEC_BENCH_PG_STATEMENTS=1` (`servers/postgres.ts`): the statement counters of the
 * server, from now on (all databases; the bench's others are idle meanwhile).
 */
export const statementsFrom = (client: pg.Client) =>
  Effect.promise(async () => {
    if (!PostgresServer.statements) return
    await client.query("CREATE EXTENSION IF NOT EXISTS pg_stat_statements")
    await client.query("SELECT pg_stat_statements_reset()")
  })

/**
 * With `APPEXEC_BENCH_PG_STATEMENTS=1`: the ten statements of this database that took the most
 * time since `statementsFrom`, on stderr, each per item of the drain (`count`): time, rows, WAL.
 */
export const printStatements = (client: pg.Client, label: string, count: number) =>
  Effect.promise(async () => {
    if (!PostgresServer.statements) return
    const { rows } = await client.query<{
      calls: string
      rows: string
      total: number
      wal: string
      query: string
    }>(
      `SELECT calls, rows, total_exec_time AS total, wal_records AS wal,
         left(regexp_replace(query, '\\s+', ' ', 'g'), 120) AS query
       FROM pg_stat_statements WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database())
       ORDER BY total_exec_time DESC LIMIT 10`
    )
    for (const row of rows) {
      const micros = (row.total * 1000) / count
      const wal = Number(row.wal) / count
      process.stderr.write(
        `${label} statement: ${micros.toFixed(1)} µs, ${wal.toFixed(2)} WAL records an item; ` +
          `${row.calls} calls, ${row.rows} rows: ${row.query}\n`
      )
    }
  })
