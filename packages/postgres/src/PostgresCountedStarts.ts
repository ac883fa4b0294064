/**
 * `CountedStarts` on PostgreSQL: a start's rate-limit hit, its verdict, the check of the key and
 * app revisions its caches were filled under, and the insert of its execution, in one statement
 * (docs/storage.md#starts-on-postgresql). The starts that come while one statement is under way
 * go together in the next (core's `Batcher`), one statement per rate-limit window among them:
 *
 * - the hits bump the `rate_limits` rows as `SqlRateLimitStore` does (each key by its number of
 *   hits, a row of an ended window restarting from them), and each hit takes its own count in the
 *   order the hits came, `count − n + 1` to `count`;
 * - an execution is inserted only when its hit is allowed — `RateLimiter.decide`'s inequality,
 *   `min(previous, limit − 1) × (window − elapsed) + current × window ≤ limit × window`, in
 *   integers — and the key and app revisions are still those of its start;
 * - the statement answers every key's counts and both revisions, which it offers to the shared
 *   read of the revisions (`internal/Revisions`): a start that was not inserted because they moved
 *   authenticates again against that read, with no statement of its own;
 * - idle workers are notified in the same statement when it inserted any execution.
 */
import { Batcher, CountedStarts, RateLimiter, type RateLimitStore, RevisionMemo } from "@appexec/core"
import { Effect, Layer } from "effect"
import { CompiledQuery } from "kysely"
import { arrayParameters, columnArrays, columnNames, insertColumns } from "./internal/ExecutionColumns.js"
import { Revisions } from "./internal/Revisions.js"
import { PostgresClient, workChannel } from "./PostgresClient.js"
import { refusedRow } from "./PostgresExecutionStore.js"

/** Most starts in one statement. */
const MAX_STARTS = 256

/** How many hits of this process pass between two sweeps of expired counters. */
const SWEEP_EVERY = 1_000

/** The parameters before the execution columns (see `statement`). */
const FIXED = 13

/**
 * The statement of one window's starts. $1 window start, $2 the window before's start, $3 and $4
 * the keys and their numbers of hits, $5 `limit − 1` (at least 0), $6 the window, $7 the limit;
 * per start: $8 its key, $9 the hits of its key after it, $10 the time left in its window, $11 and
 * $12 its key and app revisions; $13 the work channel; then one array per execution column.
 */
const statement = `
    WITH hits AS (
      INSERT INTO rate_limits AS r (key, window_start, count, previous)
      SELECT h.key, $1::bigint, h.n, 0 FROM unnest($3::text[], $4::integer[]) AS h(key, n)
      ON CONFLICT (key) DO UPDATE SET
        count = CASE WHEN r.window_start >= excluded.window_start THEN r.count + excluded.count
          ELSE excluded.count END,
        previous = CASE WHEN r.window_start >= excluded.window_start THEN r.previous
          WHEN r.window_start = $2::bigint THEN r.count ELSE 0 END,
        window_start = GREATEST(r.window_start, excluded.window_start)
      RETURNING r.key, r.count, r.previous
    ), revisions AS (
      SELECT (SELECT revision FROM key_revision WHERE id = 1) AS keys,
        (SELECT revision FROM app_revision WHERE id = 1) AS apps
    ), inserted AS (
      INSERT INTO executions (${columnNames})
      SELECT ${insertColumns.map(([column]) => `i.${column}`).join(", ")}
      FROM unnest($8::text[], $9::integer[], $10::bigint[], $11::bigint[], $12::bigint[], ${arrayParameters(FIXED + 1)})
        AS i(rate_key, after, until_end, key_revision, app_revision, ${columnNames})
      JOIN hits h ON h.key = i.rate_key CROSS JOIN revisions v
      WHERE i.key_revision = v.keys AND i.app_revision = v.apps
        AND LEAST(h.previous, $5::integer)::bigint * i.until_end + (h.count - i.after)::bigint * $6::bigint
          <= $7::bigint * $6::bigint
      RETURNING execution_id
    ), answer AS (
      SELECT ARRAY(SELECT execution_id FROM inserted) AS ids
    )
    SELECT h.key, h.count, h.previous, v.keys AS keys_revision, v.apps AS apps_revision, a.ids AS inserted,
      (SELECT count(*) FROM (SELECT pg_notify($13::text, '') WHERE cardinality(a.ids) > 0) n) AS notified
    FROM hits h CROSS JOIN revisions v CROSS JOIN answer a`

interface Row {
  readonly key: string
  readonly count: number | string
  readonly previous: number | string
  readonly keys_revision: number | string
  readonly apps_revision: number | string
  readonly inserted: ReadonlyArray<string>
}

const sweep = "DELETE FROM rate_limits WHERE window_start < $1::bigint"

/** The counted starts over the instance's pool and the shared read of the revisions. */
export const make = Effect.gen(function*() {
  const client = yield* PostgresClient
  const revisions = yield* Revisions
  const channel = workChannel(client.schema)
  let hits = 0

  /** The starts of one window (and policy), in one statement; each one's outcome, in order. */
  const countWindow = (starts: ReadonlyArray<CountedStarts.CountedStart>) =>
    Effect.gen(function*() {
      const { limit, windowMs } = starts[0]!.policy
      const now = starts[0]!.now
      const windowStart = RateLimiter.windowStartOf(now, windowMs)
      hits += starts.length
      if (hits >= SWEEP_EVERY) {
        hits = 0
        yield* client.prepared("sweep rate limits", CompiledQuery.raw(sweep, [windowStart - windowMs]))
      }
      const keys = new Map<string, number>()
      for (const start of starts) keys.set(start.key, (keys.get(start.key) ?? 0) + 1)
      // Each hit's place among its key's: how many of them come after it.
      const seen = new Map<string, number>()
      const after = starts.map((start) => {
        const before = seen.get(start.key) ?? 0
        seen.set(start.key, before + 1)
        return keys.get(start.key)! - before - 1
      })
      const began = RevisionMemo.begin()
      const { rows } = yield* client.prepared(
        "count and insert starts",
        CompiledQuery.raw(statement, [
          windowStart,
          windowStart - windowMs,
          [...keys.keys()],
          [...keys.values()],
          Math.max(0, limit - 1),
          windowMs,
          limit,
          starts.map((start) => start.key),
          after,
          starts.map((start) => windowMs - (start.now - windowStart)),
          starts.map((start) => start.revisions.keys),
          starts.map((start) => start.revisions.apps),
          channel,
          ...columnArrays(starts.map((start) => start.record))
        ]) as CompiledQuery<Row>
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
    Effect.gen(function*() {
      const groups = new Map<string, Array<number>>()
      starts.forEach((start, i) => {
        const { limit, windowMs } = start.policy
        const id = `${RateLimiter.windowStartOf(start.now, windowMs)}/${windowMs}/${limit}`
        const group = groups.get(id)
        if (group === undefined) groups.set(id, [i])
        else group.push(i)
      })
      if (groups.size === 1) return yield* countWindow(starts)
      const outcomes = new Array<CountedStarts.CountedOutcome>(starts.length)
      for (const group of groups.values()) {
        const counted = yield* countWindow(group.map((i) => starts[i]!))
        group.forEach((i, j) => outcomes[i] = counted[j]!)
      }
      return outcomes
    })

  const start = yield* Batcher.make({ maxSize: MAX_STARTS, isolate: refusedRow, write: countAll })
  return CountedStarts.CountedStarts.of({ start })
})

/** Layer of the counted starts; needs the pool and the read of the revisions (see `PostgresStorage`). */
export const layer = Layer.scoped(CountedStarts.CountedStarts, make)
