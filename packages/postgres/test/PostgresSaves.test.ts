/**
 * Migration 0020: a worker's batch of saves (`appexec_save_executions`) finds each of its rows
 * through the index of `execution_id`, whatever the table's size and statistics, and writes the
 * outbox entries of its terminal saves from the update's own rows.
 */
import { type ExecutionQueue, ExecutionQueue as Queue, ExecutionStore } from "@appexec/core"
import { PostgresClient, PostgresStorage } from "@appexec/postgres"
import { queued, seedOwner, uuid } from "@appexec/testing/contracts"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { sql } from "kysely"
import * as TestDatabase from "./support/TestDatabase.js"

const database = TestDatabase.create("saves")
let schemas = 0

/** Storage on a new schema of the test database, with the pool itself. */
const storage = () =>
  Layer.unwrapEffect(
    Effect.map(Effect.promise(() => database), (connectionString) =>
      PostgresStorage.layerFromClient.pipe(
        Layer.provideMerge(PostgresClient.layer({ connectionString, schema: `s${++schemas}`, poolSize: 4 }))
      ))
  )

/** The function's arguments for `claims` completed, the first of them with a webhook delivery. */
const completed = (claims: ReadonlyArray<ExecutionQueue.Claim>) => {
  const column = <A>(value: (claim: ExecutionQueue.Claim, i: number) => A) => claims.map(value)
  const first = <A>(value: A) => column((_, i) => (i === 0 ? value : null))
  return [
    column((c) => c.execution.executionId),
    column((c) => c.lease.token),
    column((c) => c.lease.workerId),
    column(() => "completed"),
    column(() => "[]"),
    column(() => null),
    column(() => 1_000),
    column(() => 2_000),
    first(uuid(9, 1)),
    first(claims[0]?.execution.userId),
    first("https://example.com/hook"),
    first("pending"),
    first(2_000),
    first("[]"),
    first(2_000),
    first(null),
    first("completed")
  ]
}

describe("PostgreSQL saves by index (migration 0020)", () => {
  it.effect("a batch of 300 saves on a table of 2,000 rows reads no row but its own, and writes its outbox entry", () =>
    Effect.gen(function*() {
      const { db } = yield* PostgresClient.PostgresClient
      const owner = yield* seedOwner(1)
      const store = yield* ExecutionStore.ExecutionStore
      const queue = yield* Queue.ExecutionQueue
      yield* Effect.forEach(Array.from({ length: 2_000 }, (_, i) => i + 1), (n) => store.insert(queued(owner, n)), {
        concurrency: 64,
        discard: true
      })
      yield* Effect.promise(() => sql`ANALYZE executions`.execute(db))
      const claims = yield* queue.claimBatch("w", 30_000, { limit: 300 })
      expect(claims.length).toBe(300)
      const counts = yield* Effect.promise(() =>
        db.transaction().execute(async (trx) => {
          const args = completed(claims).map((values, i) =>
            sql`${values}::${sql.raw([1, 6, 7, 12, 14].includes(i) ? "bigint" : "text")}[]`
          )
          // A backend's counts not yet reported include its earlier transactions': the difference is the save's.
          const scans = async () =>
            (await sql<{ n: number }>`SELECT pg_stat_get_xact_numscans('executions'::regclass)::integer AS n`
              .execute(trx)).rows[0]!.n
          const before = await scans()
          const saved = await sql<{ id: string }>`SELECT id FROM appexec_save_executions(${sql.join(args)}) AS s(id)`
            .execute(trx)
          const after = await scans()
          const outbox = await sql<{ n: number }>`SELECT count(*)::integer AS n FROM webhook_outbox`.execute(trx)
          return { saved: saved.rows.length, scans: after - before, outbox: outbox.rows[0]!.n }
        })
      )
      expect(counts.saved).toBe(300)
      // The statement alone, planned on the table's statistics, read all 2,000 rows into a hash.
      expect(counts.scans).toBe(0)
      expect(counts.outbox).toBe(1)
      const finished = yield* Effect.promise(() =>
        sql<{ n: number }>`SELECT count(*)::integer AS n FROM executions
          WHERE status = 'completed' AND lease_token IS NULL`.execute(db)
      )
      expect(finished.rows[0]!.n).toBe(300)
    }).pipe(Effect.provide(storage())))
})
