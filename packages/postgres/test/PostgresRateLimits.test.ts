/**
 * The rate-limit counters on PostgreSQL (migration 0009): an unlogged table, so a statement that
 * bumps them writes no WAL and waits for no flush at its commit; counts stay exact and shared by
 * every process on the schema (the `RateLimitStore` contract checks the counting itself).
 */
import { RateLimitStore } from "@appexec/core"
import { describe, expect, it } from "@effect/vitest"
import { Context, Effect, Layer } from "effect"
import pg from "pg"
import * as TestDatabase from "./support/TestDatabase.js"

const database = TestDatabase.create("ratelimits")

describe("PostgreSQL rate-limit counters", () => {
  it.live("are an unlogged table, counted once across two processes", () =>
    Effect.gen(function*() {
      const connectionString = yield* Effect.promise(() => database)
      const storage = () => Layer.build(TestDatabase.storageOn(database, "limits"))
      const [a, b] = [
        Context.get(yield* storage(), RateLimitStore.RateLimitStore),
        Context.get(yield* storage(), RateLimitStore.RateLimitStore)
      ]
      const client = new pg.Client({ connectionString })
      yield* Effect.promise(() => client.connect())
      yield* Effect.addFinalizer(() => Effect.promise(() => client.end()))
      const { rows } = yield* Effect.promise(() =>
        client.query<{ relpersistence: string }>(
          "SELECT relpersistence FROM pg_class WHERE oid = 'limits.rate_limits'::regclass"
        )
      )
      expect(rows[0]?.relpersistence).toBe("u")
      expect(yield* a.hit("10.0.0.1", 60_000, 60_000)).toEqual({ current: 1, previous: 0 })
      expect(yield* b.hit("10.0.0.1", 60_000, 60_000)).toEqual({ current: 2, previous: 0 })
      expect(yield* a.hit("10.0.0.1", 120_000, 60_000)).toEqual({ current: 1, previous: 2 })
    }).pipe(Effect.scoped))
})
