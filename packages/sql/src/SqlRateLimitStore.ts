/**
 * `RateLimitStore` on SQL, for every dialect: per key, the counter of its current window and the
 * count of the window before, bumped with one prepared `INSERT … ON CONFLICT DO UPDATE …
 * RETURNING` in autocommit mode — a single statement is atomic under concurrency (other
 * connections, other processes), so no transaction is needed. On a shared database every API
 * process counts into the same rows (one limit per client, not one per process), and a process
 * whose clock runs behind counts into the newer window it finds rather than resetting it.
 * Counters of ended windows are swept now and then, not on every hit.
 */
import { RateLimitStore } from "@appexec/core"
import { Effect, Layer } from "effect"
import * as PreparedQuery from "./PreparedQuery.js"
import { SqlRunner } from "./SqlRunner.js"

/** How many hits of this process pass between two sweeps of expired counters. */
const SWEEP_EVERY = 1_000

/** The rate-limit store over the runner. */
export const make = Effect.gen(function*() {
  const runner = yield* SqlRunner
  const { builder: db, dialect } = runner
  // Every SET expression reads the row as it was before the update.
  const bump = PreparedQuery.make((
    p: PreparedQuery.Param<{ key: string; windowStart: number; previousStart: number }>
  ) =>
    db
      .insertInto("rate_limits")
      .values({ key: p("key"), window_start: p("windowStart"), count: 1, previous: 0 })
      .onConflict((oc) =>
        oc.column("key").doUpdateSet((eb) => ({
          count: eb
            .case()
            .when("rate_limits.window_start", ">=", p("windowStart"))
            .then(eb(eb.ref("rate_limits.count"), "+", 1))
            .else(1)
            .end(),
          previous: eb
            .case()
            .when("rate_limits.window_start", ">=", p("windowStart"))
            .then(eb.ref("rate_limits.previous"))
            .when("rate_limits.window_start", "=", p("previousStart"))
            .then(eb.ref("rate_limits.count"))
            .else(0)
            .end(),
          window_start: dialect.greatest("rate_limits.window_start", p("windowStart"))
        }))
      )
      .returning(["count", "previous"])
  )
  const sweep = PreparedQuery.make((p: PreparedQuery.Param<{ expireBefore: number }>) =>
    db.deleteFrom("rate_limits").where("window_start", "<", p("expireBefore"))
  )
  let hits = 0
  const service: RateLimitStore.RateLimitStore["Type"] = {
    // Every request hits: untraced.
    hit: Effect.fnUntraced(function*(key: string, windowStart: number, windowMs: number) {
      const previousStart = windowStart - windowMs
      if (++hits % SWEEP_EVERY === 0) {
        yield* runner.run("sweep rate limits", sweep.bind({ expireBefore: previousStart }))
      }
      const row = yield* runner.first("rate limit hit", bump.bind({ key, windowStart, previousStart }))
      return { current: row?.count ?? 1, previous: row?.previous ?? 0 }
    })
  }
  return service
})

/** Layer of the rate-limit store; needs the runner of an adapter. */
export const layer = Layer.effect(RateLimitStore.RateLimitStore, make)
