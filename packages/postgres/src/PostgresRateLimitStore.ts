/**
 * `RateLimitStore` on PostgreSQL: per key, the counter of its current window and the count of the
 * window before, shared by every API process of a deployment (one limit per client, not one per
 * process). A hit is one `INSERT … ON CONFLICT DO UPDATE … RETURNING`, atomic under concurrency.
 * A process whose clock runs behind counts into the newer window it finds rather than resetting
 * it. Counters of ended windows are swept now and then, not on every hit.
 */
import { RateLimitStore } from "@appexec/core"
import { Effect, Layer } from "effect"
import { sql } from "kysely"
import { PostgresClient } from "./PostgresClient.js"

/** How many hits of this process pass between two sweeps of expired counters. */
const SWEEP_EVERY = 1_000

/** The rate-limit store over the instance's pool. */
export const make = Effect.gen(function*() {
  const client = yield* PostgresClient
  let hits = 0
  const service: RateLimitStore.RateLimitStore["Type"] = {
    hit: Effect.fnUntraced(function*(key: string, windowStart: number, windowMs: number) {
      const previousStart = windowStart - windowMs
      const row = yield* client.execute("rate limit hit", async (db) => {
        if (++hits % SWEEP_EVERY === 0) {
          await db.deleteFrom("rate_limits").where("window_start", "<", previousStart).execute()
        }
        // Every SET expression reads the row as it was before the update.
        return db
          .insertInto("rate_limits")
          .values({ key, window_start: windowStart, count: 1, previous: 0 })
          .onConflict((oc) =>
            oc.column("key").doUpdateSet({
              count: sql<number>`CASE WHEN rate_limits.window_start >= ${windowStart}::bigint
                THEN rate_limits.count + 1 ELSE 1 END`,
              previous: sql<
                number
              >`CASE WHEN rate_limits.window_start >= ${windowStart}::bigint THEN rate_limits.previous
                WHEN rate_limits.window_start = ${previousStart}::bigint THEN rate_limits.count ELSE 0 END`,
              window_start: sql<number>`GREATEST(rate_limits.window_start, ${windowStart}::bigint)`
            })
          )
          .returning(["count", "previous"])
          .executeTakeFirst()
      })
      return { current: row?.count ?? 1, previous: row?.previous ?? 0 }
    })
  }
  return service
})

/** Layer of the rate-limit store; needs the pool (see `PostgresStorage`). */
export const layer = Layer.effect(RateLimitStore.RateLimitStore, make)
