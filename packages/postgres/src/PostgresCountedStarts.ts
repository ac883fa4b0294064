/**
 * `CountedStarts` on PostgreSQL: a start's rate-limit hit, its verdict, the check of the key and
 * app revisions its caches were filled under, and the insert of its execution, in one statement
 * (docs/storage.md#starts-on-postgresql). The starts that come while one statement is under way
 * go together in the next (core's `Batcher`), one statement per rate-limit window among them:
 *
 * - the hits bump the `rate_limits` rows as `SqlRateLimitStore` does, with the same pieces
 *   (`RateLimitCounters` of `@appexec/sql`: each key by its number of hits, a row of an ended
 *   window restarting from them, each hit taking its own count in the order the hits came,
 *   `count − n + 1` to `count`, and a sweep of ended windows now and then);
 * - an execution is inserted only when its hit is allowed — `RateLimiter.decide`'s inequality,
 *   `min(previous, limit − 1) × (window − elapsed) + current × window ≤ limit × window`, in
 *   integers — and the key and app revisions are still those of its start;
 * - the statement answers every key's counts and both revisions, which it offers to the shared
 *   read of the revisions (`internal/Revisions`): a start that was not inserted because they moved
 *   authenticates again against that read, with no statement of its own;
 * - idle workers are notified in the same statement when it inserted any execution.
 */
import { Batcher, CountedStarts, RateLimiter, type RateLimitStore, RevisionMemo } from "@appexec/core"
import { PreparedQuery, RateLimitCounters } from "@appexec/sql"
import { Effect, Layer } from "effect"
import { sql } from "kysely"
import { columnArrays, columnNames, insertColumns } from "./internal/ExecutionColumns.js"
import { Revisions } from "./internal/Revisions.js"
import { dialect } from "./internal/Runner.js"
import { PostgresClient, workChannel } from "./PostgresClient.js"
import { refusedRow } from "./PostgresExecutionStore.js"

/** Most starts in one statement. */
const MAX_STARTS = 256

/** The parameters of the statement of one window's starts, beside one array per execution column. */
type Params = {
  readonly windowStart: number
  /** The start of the window before. */
  readonly previousStart: number
  /** The keys and their numbers of hits. */
  readonly keys: ReadonlyArray<string>
  readonly hits: ReadonlyArray<number>
  /** `limit − 1`, at least 0. */
  readonly lessOne: number
  readonly windowMs: number
  readonly limit: number
  /** Per start: its key, the hits of its key after it, the time left in its window, its key and app revisions. */
  readonly rateKeys: ReadonlyArray<string>
  readonly after: ReadonlyArray<number>
  readonly untilEnd: ReadonlyArray<number>
  readonly keyRevisions: ReadonlyArray<number>
  readonly appRevisions: ReadonlyArray<number>
  /** The work channel. */
  readonly channel: string
  /** The values of the execution column `insertColumns[i]`, one per start. */
  readonly [column: `column${number}`]: ReadonlyArray<unknown>
}

interface Row {
  readonly key: string
  readonly count: number | string
  readonly previous: number | string
  readonly keys_revision: number | string
  readonly apps_revision: number | string
  readonly inserted: ReadonlyArray<string>
}

/** The counted starts over the instance's pool and the shared read of the revisions. */
export const make = Effect.gen(function*() {
  const client = yield* PostgresClient
  const revisions = yield* Revisions
  const channel = workChannel(client.schema)
  const { db } = client

  /** The statement of one window's starts: the hits bump the counters as every count of hits does. */
  const statement = PreparedQuery.make((p: PreparedQuery.Param<Params>) => {
    const hits = db
      .insertInto("rate_limits")
      .columns(["key", "window_start", "count", "previous"])
      .expression(
        sql`SELECT h.key, ${p("windowStart")}::bigint, h.n, 0
          FROM unnest(${p("keys")}::text[], ${p("hits")}::integer[]) AS h(key, n)`
      )
      .onConflict(RateLimitCounters.onConflict(dialect, sql<number>`${p("previousStart")}::bigint`))
      .returning(RateLimitCounters.counts)
    const columns = sql.join(
      insertColumns.map(([, type], i) => sql`${p(`column${i}`)}::${sql.raw(type)}[]`)
    )
    const query = sql<Row>`
    WITH hits AS (${hits}), revisions AS (
      SELECT (SELECT revision FROM key_revision WHERE id = 1) AS keys,
        (SELECT revision FROM app_revision WHERE id = 1) AS apps
    ), inserted AS (
      INSERT INTO executions (${sql.raw(columnNames)})
      SELECT ${sql.raw(insertColumns.map(([column]) => `i.${column}`).join(", "))}
      FROM unnest(${p("rateKeys")}::text[], ${p("after")}::integer[], ${p("untilEnd")}::bigint[],
        ${p("keyRevisions")}::bigint[], ${p("appRevisions")}::bigint[], ${columns})
        AS i(rate_key, after, until_end, key_revision, app_revision, ${sql.raw(columnNames)})
      JOIN hits h ON h.key = i.rate_key CROSS JOIN revisions v
      WHERE i.key_revision = v.keys AND i.app_revision = v.apps
        AND LEAST(h.previous, ${p("lessOne")}::integer)::bigint * i.until_end
          + (h.count - i.after)::bigint * ${p("windowMs")}::bigint
          <= ${p("limit")}::bigint * ${p("windowMs")}::bigint
      RETURNING execution_id
    ), answer AS (
      SELECT ARRAY(SELECT execution_id FROM inserted) AS ids
    )
    SELECT h.key, h.count, h.previous, v.keys AS keys_revision, v.apps AS apps_revision, a.ids AS inserted,
      (SELECT count(*) FROM (SELECT pg_notify(${p("channel")}::text, '') WHERE cardinality(a.ids) > 0) n) AS notified
    FROM hits h CROSS JOIN revisions v CROSS JOIN answer a`
    return { compile: () => query.compile(db) }
  })
  const sweep = RateLimitCounters.sweeper(db, (operation, query) => client.prepared(operation, query.compile()))

  /** The starts of one window (and policy), in one statement; each one's outcome, in order. */
  const countWindow = (starts: ReadonlyArray<CountedStarts.CountedStart>) =>
    Effect.gen(function*() {
      const { limit, windowMs } = starts[0]!.policy
      const now = starts[0]!.now
      const windowStart = RateLimiter.windowStartOf(now, windowMs)
      yield* sweep(starts.length, windowStart - windowMs)
      const { after, keys } = RateLimitCounters.tally(starts.map((start) => start.key))
      const columns = columnArrays(starts.map((start) => start.record))
      const began = RevisionMemo.begin()
      const { rows } = yield* client.prepared(
        "count and insert starts",
        statement.bind({
          windowStart,
          previousStart: windowStart - windowMs,
          keys: [...keys.keys()],
          hits: [...keys.values()],
          lessOne: Math.max(0, limit - 1),
          windowMs,
          limit,
          rateKeys: starts.map((start) => start.key),
          after,
          untilEnd: starts.map((start) => windowMs - (start.now - windowStart)),
          keyRevisions: starts.map((start) => start.revisions.keys),
          appRevisions: starts.map((start) => start.revisions.apps),
          channel,
          ...Object.fromEntries(columns.map((values, i) => [`column${i}`, values]))
        }).compile()
      )
      const first = rows[0]
      if (first !== undefined) {
        revisions.offer(began, { keys: Number(first.keys_revision), apps: Number(first.apps_revision) })
      }
      const counted = new Map(rows.map((row) => [row.key, row]))
      const inserted = new Set(first?.inserted ?? [])
      return starts.map((start, i): CountedStarts.CountedOutcome => {
        const row = counted.get(start.key)!
        const counts: RateLimitStore.WindowCounts = {
          current: Number(row.count) - after[i]!,
          previous: Number(row.previous)
        }
        return { counts, inserted: inserted.has(start.record.executionId) }
      })
    })

  /** The starts of a batch, one statement per window and policy among them (one, but at a window's edge). */
  const countAll = (starts: ReadonlyArray<CountedStarts.CountedStart>) =>
    RateLimitCounters.inGroups(starts, (start) => {
      const { limit, windowMs } = start.policy
      return `${RateLimiter.windowStartOf(start.now, windowMs)}/${windowMs}/${limit}`
    }, countWindow)

  const start = yield* Batcher.make({ maxSize: MAX_STARTS, isolate: refusedRow, write: countAll })
  return CountedStarts.CountedStarts.of({ start })
})

/** Layer of the counted starts; needs the pool and the read of the revisions (see `PostgresStorage`). */
export const layer = Layer.scoped(CountedStarts.CountedStarts, make)
