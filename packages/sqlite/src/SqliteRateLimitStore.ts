/**
 * `RateLimitStore` on SQLite: one fixed-window counter per key, bumped with one upsert.
 * Counters of ended windows are swept now and then, not on every hit.
 */
import { RateLimitStore } from "@appexec/core"
import { Effect, Layer } from "effect"
import { SqliteClient } from "./SqliteClient.js"

/** How many hits pass between two sweeps of expired counters. */
const SWEEP_EVERY = 1_000

/** The rate-limit store over the instance's connection. */
export const make = Effect.gen(function* () {
  const client = yield* SqliteClient
  const db = client.builder
  let hits = 0
  const service: RateLimitStore.RateLimitStore["Type"] = {
    hit: (key, windowStart, expireBefore) =>
      client.transaction("rate limit hit", (c) => {
        if (++hits % SWEEP_EVERY === 0) c.run(db.deleteFrom("rate_limits").where("window_start", "<", expireBefore))
        const row = c.get(
          db
            .insertInto("rate_limits")
            .values({ key, window_start: windowStart, count: 1 })
            .onConflict((oc) =>
              oc.column("key").doUpdateSet((eb) => ({
                count: eb
                  .case()
                  .when("rate_limits.window_start", "=", windowStart)
                  .then(eb(eb.ref("rate_limits.count"), "+", 1))
                  .else(1)
                  .end(),
                window_start: windowStart
              }))
            )
            .returning("count")
        )
        return row?.count ?? 1
      })
  }
  return service
})

/** Layer of the rate-limit store; needs the connection (see `SqliteStorage`). */
export const layer = Layer.effect(RateLimitStore.RateLimitStore, make)
