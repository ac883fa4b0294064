/**
 * The pool's connections in the metrics (`DatabasePool`, `appexec_db_pool_*`): connections held by
 * transactions count as in use, a query that finds none free counts as waiting, and they come
 * back idle; the pool's size is its max.
 */
import { AppexecMetrics, DatabasePool } from "@appexec/core"
import { PostgresClient, PostgresStorage } from "@appexec/postgres"
import { describe, expect, it } from "@effect/vitest"
import { Deferred, Effect, Fiber, Layer, Schedule } from "effect"
import { sql } from "kysely"
import * as TestDatabase from "./support/TestDatabase.js"

const database = TestDatabase.create("pool_metrics")
const storage = Layer.unwrapEffect(
  Effect.map(
    Effect.promise(() => database),
    (connectionString) =>
      PostgresStorage.layerFromClient.pipe(
        Layer.provideMerge(PostgresClient.layer({ connectionString, schema: "pool", poolSize: 2 }))
      )
  )
)

/** The value of the series `series` (name and labels) in Prometheus text. */
const valueOf = (text: string, series: string) => {
  const line = text.split("\n").find((l) => l.startsWith(`${series} `))
  return line === undefined ? undefined : Number(line.slice(series.length + 1))
}

describe("PostgreSQL pool metrics", () => {
  it.live("connections in use, idle and waiting, and the pool's max, read at scrape", () =>
    Effect.gen(function*() {
      const client = yield* PostgresClient.PostgresClient
      const pool = yield* DatabasePool.DatabasePool
      const until = (done: (stats: DatabasePool.PoolStats) => boolean) =>
        pool.stats.pipe(
          Effect.repeat({ until: done, schedule: Schedule.spaced("5 millis") }),
          Effect.timeoutFail({ duration: "10 seconds", onTimeout: () => new Error("the pool never got there") }),
          Effect.orDie
        )
      const release = yield* Deferred.make<void>()
      const hold = client.transaction("hold", async (trx) => {
        await sql`SELECT 1`.execute(trx)
        await Effect.runPromise(Deferred.await(release))
      })
      const holders = yield* Effect.all([Effect.fork(hold), Effect.fork(hold)])
      yield* until((s) => s.inUse === 2)
      const waiting = yield* Effect.fork(client.execute("third", (db) => sql`SELECT 1`.execute(db)))
      yield* until((s) => s.waiting === 1)
      // Without the database's gauges: every connection is taken, so the scrape reads no table.
      const busy = yield* AppexecMetrics.prometheusOf({ database: false })
      expect(valueOf(busy, "appexec_db_pool_connections{state=\"in_use\"}")).toBe(2)
      expect(valueOf(busy, "appexec_db_pool_connections{state=\"idle\"}")).toBe(0)
      expect(valueOf(busy, "appexec_db_pool_waiting")).toBe(1)
      expect(valueOf(busy, "appexec_db_pool_max")).toBe(2)

      yield* Deferred.succeed(release, undefined)
      yield* Effect.forEach(holders, Fiber.join, { discard: true })
      yield* Fiber.join(waiting)
      yield* until((s) => s.inUse === 0)
      const calm = yield* AppexecMetrics.prometheus
      expect(valueOf(calm, "appexec_db_pool_connections{state=\"idle\"}")).toBe(2)
      expect(valueOf(calm, "appexec_db_pool_waiting")).toBe(0)
      expect(valueOf(calm, "appexec_queue_depth{scope=\"database\"}")).toBe(0)
    }).pipe(Effect.provide(storage)), 60_000)
})
