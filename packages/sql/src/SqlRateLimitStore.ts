/**
 * `RateLimitStore` on SQL, for every dialect: per key, the counter of its current window and the
 * count of the window before, bumped with one `INSERT … ON CONFLICT DO UPDATE … RETURNING` in
 * autocommit mode — a single statement is atomic under concurrency (other connections, other
 * processes), so no transaction is needed. On a shared database every API process counts into
 * the same rows (one limit per client, not one per process), and a process whose clock runs
 * behind counts into the newer window it finds rather than resetting it. Counters of ended
 * windows are swept now and then, not on every hit.
 *
 * Hits are counted in groups (core's `Batcher`): a hit made while no statement is under way is
 * counted at once by its caller; the hits made while one is under way (on a database over a
 * network, the hits of the turns it spans) wait for it and are then counted together, one
 * statement for all of them, each key bumped by its number of hits. The count the statement
 * returns is handed out as if the hits had been counted one by one in the order they came,
 * `count − n + 1` to `count`, so each hit sees its own count and limits stay exact. When the
 * store's scope closes, the hits still waiting end interrupted.
 *
 * An adapter may have each statement read more beside its counts (`makeWith`'s `alongside`:
 * PostgreSQL reads the key and app revisions, so a request's key and app are checked without a
 * round trip of their own).
 */
import { Batcher, RateLimitStore } from "@appexec/core"
import { Effect, Layer } from "effect"
import type { AliasedRawBuilder } from "kysely"
import * as PreparedQuery from "./PreparedQuery.js"
import * as RateLimitCounters from "./RateLimitCounters.js"
import { SqlRunner } from "./SqlRunner.js"

/** At most this many hits in one statement; more wait for the next. */
const MAX_HITS = 500

type Counts = RateLimitStore.WindowCounts

/** One hit, as the batcher holds it. */
interface Hit {
  readonly key: string
  readonly windowStart: number
  readonly windowMs: number
}

/** Columns read by each statement of the hits beside their counts, and what takes them. */
export interface Alongside {
  /** The columns, each a scalar expression with its name. */
  readonly columns: ReadonlyArray<AliasedRawBuilder<unknown, string>>
  /** When a statement begins, just before it is sent: handed to `take` with its first row. */
  readonly begin: () => number
  /** The columns as the statement that began at `began` read them (its first row). */
  readonly take: (began: number, row: Readonly<Record<string, unknown>>) => void
}

/** The rate-limit store over the runner; each statement also reads `alongside`'s columns, if any. */
export const makeWith = ({ alongside }: { readonly alongside?: Alongside | undefined } = {}) =>
  Effect.gen(function*() {
    const runner = yield* SqlRunner
    const { builder: db, dialect } = runner
    const extra = alongside?.columns ?? []
    // One key (a group of one client's hits, the common case): compiled once.
    const bumpOne = PreparedQuery.make((
      p: PreparedQuery.Param<{ key: string; n: number; windowStart: number; previousStart: number }>
    ) =>
      db
        .insertInto("rate_limits")
        .values({ key: p("key"), window_start: p("windowStart"), count: p("n"), previous: 0 })
        .onConflict(RateLimitCounters.onConflict(dialect, p("previousStart")))
        .returning([...RateLimitCounters.counts, ...extra])
    )
    const sweep = RateLimitCounters.sweeper(db, runner.run)

    /** Counts the hits of one window in one statement, each key bumped by its hits; each hit's counts, in order. */
    const countWindow = (group: ReadonlyArray<Hit>) =>
      Effect.gen(function*() {
        const { windowMs, windowStart } = group[0]!
        const previousStart = windowStart - windowMs
        yield* sweep(group.length, previousStart)
        const { after, keys } = RateLimitCounters.tally(group.map((hit) => hit.key))
        const began = alongside?.begin() ?? 0
        const rows = keys.size === 1
          ? yield* runner.all(
            "rate limit hit",
            bumpOne.bind({ key: group[0]!.key, n: group.length, windowStart, previousStart })
          )
          : yield* runner.all(
            "rate limit hits",
            db
              .insertInto("rate_limits")
              .values([...keys].map(([key, n]) => ({ key, window_start: windowStart, count: n, previous: 0 })))
              .onConflict(RateLimitCounters.onConflict(dialect, previousStart))
              .returning([...RateLimitCounters.counts, ...extra])
          )
        if (alongside !== undefined && rows.length > 0) alongside.take(began, rows[0]!)
        // Every key of the statement comes back (an upsert returns its row).
        const counted = new Map(rows.map((row) => [row.key, row]))
        return group.map((hit, i): Counts => {
          const row = counted.get(hit.key)!
          return { current: Number(row.count) - after[i]!, previous: Number(row.previous) }
        })
      })

    /** Counts the hits of a batch, one statement per window among them (one, but at a window's edge); each hit's counts, in order. */
    const countAll = (group: ReadonlyArray<Hit>) =>
      RateLimitCounters.inGroups(group, (hit) => `${hit.windowStart}/${hit.windowMs}`, countWindow)

    const submit = yield* Batcher.make({ maxSize: MAX_HITS, write: countAll })

    const service: RateLimitStore.RateLimitStore["Type"] = {
      // Every request hits: untraced.
      hit: (key, windowStart, windowMs) => submit({ key, windowStart, windowMs })
    }
    return service
  })

/** The rate-limit store over the runner. */
export const make = makeWith()

/** Layer of the rate-limit store; needs the runner of an adapter. */
export const layer = Layer.scoped(RateLimitStore.RateLimitStore, make)
