/**
 * The `rate_limits` counters as every statement that counts hits writes them, whatever else the
 * statement does (`SqlRateLimitStore`, and PostgreSQL's counted starts, whose statement also
 * inserts executions):
 *
 * - a row is bumped with `INSERT … ON CONFLICT (key) DO UPDATE` (`onConflict`): each key by its
 *   number of hits, a row of an ended window restarting from them (its count becoming `previous`
 *   when that window was the one just before), a row of a newer window (a process whose clock runs
 *   behind) counted into as it is;
 * - the hits of a batch go one statement per window (`inGroups`), and within one the hits of a key
 *   take its count in the order they came, `count − n + 1` to `count` (`tally`);
 * - the counters of ended windows are swept now and then, not on every hit (`sweeper`).
 */
import { Effect } from "effect"
import type { Compilable, Expression, Kysely, OnConflictBuilder } from "kysely"
import * as PreparedQuery from "./PreparedQuery.js"
import type { SqlDialect } from "./SqlDialect.js"
import type { Tables } from "./SqlTables.js"

/** How many hits of a process pass between two sweeps of expired counters. */
export const SWEEP_EVERY = 1_000

/** The columns a bump returns: the key and its counts once bumped. */
export const counts = ["key", "count", "previous"] as const

/**
 * The update of a row that exists by the row being inserted (`excluded`: its window's start and
 * its number of hits); every SET expression reads the row as it was. `previousStart` is the start
 * of the window before the hits'.
 */
export const onConflict =
  (dialect: SqlDialect, previousStart: number | Expression<number>) => (oc: OnConflictBuilder<Tables, "rate_limits">) =>
    oc.column("key").doUpdateSet((eb) => ({
      count: eb
        .case()
        .when("rate_limits.window_start", ">=", eb.ref("excluded.window_start"))
        .then(eb(eb.ref("rate_limits.count"), "+", eb.ref("excluded.count")))
        .else(eb.ref("excluded.count"))
        .end(),
      previous: eb
        .case()
        .when("rate_limits.window_start", ">=", eb.ref("excluded.window_start"))
        .then(eb.ref("rate_limits.previous"))
        .when("rate_limits.window_start", "=", previousStart)
        .then(eb.ref("rate_limits.count"))
        .else(0)
        .end(),
      window_start: dialect.greatest("rate_limits.window_start", eb.ref("excluded.window_start"))
    }))

/** The hits of one statement by key: how many each key has, and for each hit how many of its key's come after it. */
export interface Tally {
  /** Each key's number of hits, in the order the keys first came. */
  readonly keys: ReadonlyMap<string, number>
  /** Per hit, in order: the hits of its key after it, so its own count is the key's bumped count less this. */
  readonly after: ReadonlyArray<number>
}

/** The tally of hits of the keys `keys` (one entry per hit, in the order they came). */
export const tally = (keys: ReadonlyArray<string>): Tally => {
  const byKey = new Map<string, number>()
  for (const key of keys) byKey.set(key, (byKey.get(key) ?? 0) + 1)
  const seen = new Map<string, number>()
  const after = keys.map((key) => {
    const before = seen.get(key) ?? 0
    seen.set(key, before + 1)
    return byKey.get(key)! - before - 1
  })
  return { keys: byKey, after }
}

/**
 * Writes `items` one group at a time (`write`: one statement, answering each item of its group in
 * order), the groups as `groupOf` names them (one, but at a window's edge); each item's answer, in
 * order.
 */
export const inGroups = <A, B, E, R>(
  items: ReadonlyArray<A>,
  groupOf: (item: A) => string,
  write: (group: ReadonlyArray<A>) => Effect.Effect<ReadonlyArray<B>, E, R>
): Effect.Effect<ReadonlyArray<B>, E, R> => {
  if (items.length === 1) return write(items)
  const groups = new Map<string, Array<number>>()
  items.forEach((item, i) => {
    const id = groupOf(item)
    const group = groups.get(id)
    if (group === undefined) groups.set(id, [i])
    else group.push(i)
  })
  if (groups.size === 1) return write(items)
  return Effect.gen(function*() {
    const answers = new Array<B>(items.length)
    for (const group of groups.values()) {
      const written = yield* write(group.map((i) => items[i]!))
      group.forEach((i, j) => answers[i] = written[j]!)
    }
    return answers
  })
}

/**
 * The sweep of the counters of ended windows, run through `run` once every `SWEEP_EVERY` hits of
 * this sweeper: `(hits, previousStart)` counts `hits` more and, when a sweep is due, deletes the
 * counters of windows before `previousStart` (the start of the window before the current one).
 */
export const sweeper = <E>(
  db: Kysely<Tables>,
  run: (operation: string, query: Compilable<unknown>) => Effect.Effect<unknown, E>
) => {
  const sweep = PreparedQuery.make((p: PreparedQuery.Param<{ expireBefore: number }>) =>
    db.deleteFrom("rate_limits").where("window_start", "<", p("expireBefore"))
  )
  let hits = 0
  return (more: number, previousStart: number): Effect.Effect<void, E> => {
    hits += more
    if (hits < SWEEP_EVERY) return Effect.void
    hits = 0
    return Effect.asVoid(run("sweep rate limits", sweep.bind({ expireBefore: previousStart })))
  }
}
