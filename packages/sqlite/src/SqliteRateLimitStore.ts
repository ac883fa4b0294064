/**
 * `RateLimitStore` on SQLite: per key, the counter of its current window and the count of the
 * window before, bumped with one prepared `INSERT … ON CONFLICT DO UPDATE … RETURNING` in
 * autocommit mode — a single statement is atomic, also against other processes on the file, so
 * no transaction is needed. Counters of ended windows are swept now and then, not on every hit.
 */
import { RateLimitStore } from "@appexec/core"
import { PreparedQuery } from "@appexec/sql"
import { Effect, Layer } from "effect"
import { SqliteClient } from "./SqliteClient.js"

/** How many hits pass between two sweeps of expired counters. */
const SWEEP_EVERY = 1_000

/** The rate-limit store over the instance's connection. */
export const make = Effect.gen(function*() {
  const client = yield* SqliteClient
  const db = client.builder
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
            .when("rate_limits.window_start", "=", p("windowStart"))
            .then(eb(eb.ref("rate_limits.count"), "+", 1))
            .else(1)
            .end(),
          previous: eb
            .case()
            .when("rate_limits.window_start", "=", p("windowStart"))
            .then(eb.ref("rate_limits.previous"))
            .when("rate_limits.window_start", "=", p("previousStart"))
            .then(eb.ref("rate_limits.count"))
            .else(0)
            .end(),
          window_start: p("windowStart")
        }))
      )
      .returning(["count", "previous"])
  )
  const sweep = PreparedQuery.make((p: PreparedQuery.Param<{ expireBefore: number }>) =>
    db.deleteFrom("rate_limits").where("window_start", "<", p("expireBefore"))
  )
  let hits = 0
  const service: RateLimitStore.RateLimitStore["Type"] = {
    hit: Effect.fnUntraced(function*(key: string, windowStart: number, windowMs: number) {
      const previousStart = windowStart - windowMs
      const row = yield* client.execute("rate limit hit", (c) => {
        if (++hits % SWEEP_EVERY === 0) c.run(sweep.bind({ expireBefore: previousStart }))
        return c.get(bump.bind({ key, windowStart, previousStart }))
      })
      return { current: row?.count ?? 1, previous: row?.previous ?? 0 }
    })
  }
  return service
})

/** Layer of the rate-limit store; needs the connection (see `SqliteStorage`). */
export const layer = Layer.effect(RateLimitStore.RateLimitStore, make)
