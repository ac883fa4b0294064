/**
 * `RateLimitStore` on SQL, for every dialect: per key, the counter of its current window and the
 * count of the window before, bumped with one `INSERT … ON CONFLICT DO UPDATE … RETURNING` in
 * autocommit mode — a single statement is atomic under concurrency (other connections, other
 * processes), so no transaction is needed. On a shared database every API process counts into
 * the same rows (one limit per client, not one per process), and a process whose clock runs
 * behind counts into the newer window it finds rather than resetting it. Counters of ended
 * windows are swept now and then, not on every hit.
 *
 * Hits are counted in groups: a hit made while no statement is under way is counted at once by
 * its caller; the hits made while one is under way (on a database over a network, the hits of
 * the turns it spans) wait for it and are then counted together, one statement for all of them,
 * each key bumped by its number of hits. The count the statement returns is handed out as if the
 * hits had been counted one by one in the order they came, `count − n + 1` to `count`, so each
 * hit sees its own count and limits stay exact.
 */
import { RateLimitStore } from "@appexec/core"
import type { Errors } from "@appexec/core"
import { Deferred, Effect, Exit, FiberId, Layer } from "effect"
import * as PreparedQuery from "./PreparedQuery.js"
import { SqlRunner } from "./SqlRunner.js"

/** How many hits of this process pass between two sweeps of expired counters. */
const SWEEP_EVERY = 1_000

/** At most this many keys in one statement; more wait for the next. */
const MAX_KEYS = 500

type Counts = RateLimitStore.WindowCounts

/** A hit waiting for its group's statement. */
interface Waiting {
  readonly key: string
  readonly windowStart: number
  readonly windowMs: number
  readonly done: Deferred.Deferred<Counts, Errors.StorageError>
}

/** The rate-limit store over the runner. */
export const make = Effect.gen(function*() {
  const runner = yield* SqlRunner
  const scope = yield* Effect.scope
  const { builder: db, dialect } = runner
  /** The update of a row that exists, `n` hits more (`excluded.count`); every SET expression reads the row as it was. */
  const onConflict =
    (previousStart: unknown) =>
    (oc: Parameters<Parameters<ReturnType<typeof db.insertInto<"rate_limits">>["onConflict"]>[0]>[0]) =>
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
          .when("rate_limits.window_start", "=", previousStart as number)
          .then(eb.ref("rate_limits.count"))
          .else(0)
          .end(),
        window_start: dialect.greatest("rate_limits.window_start", eb.ref("excluded.window_start"))
      }))
  // One key (a group of one client's hits, the common case): compiled once.
  const bumpOne = PreparedQuery.make((
    p: PreparedQuery.Param<{ key: string; n: number; windowStart: number; previousStart: number }>
  ) =>
    db
      .insertInto("rate_limits")
      .values({ key: p("key"), window_start: p("windowStart"), count: p("n"), previous: 0 })
      .onConflict(onConflict(p("previousStart")))
      .returning(["key", "count", "previous"])
  )
  const sweep = PreparedQuery.make((p: PreparedQuery.Param<{ expireBefore: number }>) =>
    db.deleteFrom("rate_limits").where("window_start", "<", p("expireBefore"))
  )
  let hits = 0

  /** Bumps each key by its hits (all of one window) in one statement; the counts of each hit, in order. */
  const countGroup = (windowStart: number, windowMs: number, keys: ReadonlyMap<string, number>) =>
    Effect.gen(function*() {
      const previousStart = windowStart - windowMs
      hits += [...keys.values()].reduce((sum, n) => sum + n, 0)
      if (hits >= SWEEP_EVERY) {
        hits = 0
        yield* runner.run("sweep rate limits", sweep.bind({ expireBefore: previousStart }))
      }
      const rows = keys.size === 1
        ? yield* runner.all(
          "rate limit hit",
          bumpOne.bind({ key: keys.keys().next().value!, n: keys.values().next().value!, windowStart, previousStart })
        )
        : yield* runner.all(
          "rate limit hits",
          db
            .insertInto("rate_limits")
            .values([...keys].map(([key, n]) => ({ key, window_start: windowStart, count: n, previous: 0 })))
            .onConflict(onConflict(previousStart))
            .returning(["key", "count", "previous"])
        )
      return new Map(rows.map((row) => [row.key, { count: Number(row.count), previous: Number(row.previous) }]))
    })

  /** Counts the hits of a group: one statement per window among them (one, but at a window's edge). */
  const countAll = (group: ReadonlyArray<Waiting>) =>
    Effect.gen(function*() {
      const windows = new Map<string, { windowStart: number; windowMs: number; keys: Map<string, number> }>()
      for (const hit of group) {
        const id = `${hit.windowStart}/${hit.windowMs}`
        let window = windows.get(id)
        if (window === undefined) {
          window = { windowStart: hit.windowStart, windowMs: hit.windowMs, keys: new Map() }
          windows.set(id, window)
        }
        window.keys.set(hit.key, (window.keys.get(hit.key) ?? 0) + 1)
      }
      for (const window of windows.values()) {
        const counted = yield* countGroup(window.windowStart, window.windowMs, window.keys)
        // The hits of a key take its counts in the order they came.
        const next = new Map<string, number>()
        for (const hit of group) {
          if (hit.windowStart !== window.windowStart || hit.windowMs !== window.windowMs) continue
          const row = counted.get(hit.key)
          const n = window.keys.get(hit.key)!
          const seen = next.get(hit.key) ?? 0
          next.set(hit.key, seen + 1)
          const counts: Counts = row === undefined
            ? { current: seen + 1, previous: 0 }
            : { current: row.count - n + seen + 1, previous: row.previous }
          Deferred.unsafeDone(hit.done, Effect.succeed(counts))
        }
      }
    })

  /** The hits made while a statement is under way: counted together when it ends. */
  let waiting: Array<Waiting> = []
  let counting = false

  /** Counts the waiting hits, group after group, until none waits; then stops. */
  const drain: Effect.Effect<void> = Effect.suspend(() => {
    if (waiting.length === 0) {
      counting = false
      return Effect.void
    }
    const group = waiting.length <= MAX_KEYS ? waiting : waiting.slice(0, MAX_KEYS)
    waiting = waiting.length <= MAX_KEYS ? [] : waiting.slice(MAX_KEYS)
    return Effect.zipRight(
      Effect.exit(countAll(group)).pipe(
        // A failed statement fails the hits it did not count (those of a window counted before stay counted).
        Effect.flatMap((exit: Exit.Exit<void, Errors.StorageError>) =>
          Exit.isSuccess(exit)
            ? Effect.void
            : Effect.forEach(group, (hit) => Deferred.failCause(hit.done, exit.cause), { discard: true })
        ),
        Effect.onInterrupt(() => Effect.forEach(group, (hit) => Deferred.interrupt(hit.done), { discard: true }))
      ),
      drain
    )
  })

  /** One hit counted by its caller, at once; the hits that came meanwhile are counted after it. */
  const lead = (key: string, windowStart: number, windowMs: number) =>
    Effect.ensuring(
      Effect.map(
        countGroup(windowStart, windowMs, new Map([[key, 1]])),
        (counted): Counts => {
          const row = counted.get(key)
          return { current: row?.count ?? 1, previous: row?.previous ?? 0 }
        }
      ),
      Effect.suspend(() => {
        if (waiting.length === 0) {
          counting = false
          return Effect.void
        }
        return Effect.asVoid(Effect.forkIn(drain, scope))
      })
    )

  const service: RateLimitStore.RateLimitStore["Type"] = {
    // Every request hits: untraced, and without a generator.
    hit: (key, windowStart, windowMs) =>
      Effect.suspend(() => {
        if (!counting) {
          counting = true
          return lead(key, windowStart, windowMs)
        }
        const done = Deferred.unsafeMake<Counts, Errors.StorageError>(FiberId.none)
        waiting.push({ key, windowStart, windowMs, done })
        return Deferred.await(done)
      })
  }
  return service
})

/** Layer of the rate-limit store; needs the runner of an adapter. */
export const layer = Layer.scoped(RateLimitStore.RateLimitStore, make)
