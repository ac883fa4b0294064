/**
 * Migration 0019: a claim rewrites its rows in place (a HOT update, no new index entry), because
 * no index of `executions` holds a lease column and its pages keep room for the new versions; a
 * worker's look for cancels reads the executions with a request alone.
 */
import { Ids } from "@appexec/api"
import { type ExecutionRecord, ExecutionStore } from "@appexec/core"
import { PostgresClient, PostgresStorage } from "@appexec/postgres"
import { type Owner, seedOwner, uuid } from "@appexec/testing/contracts"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { sql } from "kysely"
import * as TestDatabase from "./support/TestDatabase.js"

const LEASE = 30_000
const database = TestDatabase.create("claims_in_place")
let schemas = 0

/** Storage on a new schema of the test database, with the pool itself. */
const storage = () =>
  Layer.unwrapEffect(
    Effect.map(Effect.promise(() => database), (connectionString) =>
      PostgresStorage.layerFromClient.pipe(
        Layer.provideMerge(PostgresClient.layer({ connectionString, schema: `c${++schemas}`, poolSize: 4 }))
      ))
  )

/** Queued execution `n` of `owner`. */
const queued = (owner: Owner, n: number): ExecutionRecord.ExecutionRecord => ({
  executionId: Ids.ExecutionId.make(uuid(7, n)),
  workflowId: owner.workflowId,
  appId: owner.appId,
  workspaceId: owner.workspaceId,
  userId: owner.userId,
  status: "queued",
  inputs: { prompt: `prompt ${n}` },
  outputs: [{ id: "out", label: "Out", type: "pending", value: null, status: "pending", error: null }],
  errorMessage: null,
  webhookUrl: `https://example.com/hook/${n}`,
  createdAt: n,
  startedAt: null,
  completedAt: null
})

describe("PostgreSQL claims in place (migration 0019)", () => {
  it.effect("the open index holds no lease column, the table's pages keep room, cancel requests have their index", () =>
    Effect.gen(function*() {
      const { db } = yield* PostgresClient.PostgresClient
      const { rows } = yield* Effect.promise(() =>
        sql<{ indexdef: string; reloptions: ReadonlyArray<string> | null }>`
          SELECT i.indexdef, c.reloptions FROM pg_indexes i
            JOIN pg_class c ON c.relname = i.tablename AND c.relnamespace = to_regnamespace(i.schemaname)
          WHERE i.indexname = 'executions_open_by_workspace' AND i.schemaname = current_schema()`.execute(db)
      )
      expect(rows.length).toBe(1)
      expect(rows[0]!.indexdef).toMatch(/\(workspace_id, queue_at, seq\) WHERE/)
      expect(rows[0]!.reloptions).toEqual(["fillfactor=50"])
      const cancels = yield* Effect.promise(() =>
        sql<{ indexdef: string }>`SELECT indexdef FROM pg_indexes
          WHERE indexname = 'executions_cancel_requested' AND schemaname = current_schema()`.execute(db)
      )
      expect(cancels.rows.map((row) => row.indexdef)).toEqual([
        expect.stringMatching(/\(seq\) WHERE \(\(cancel_requested_at IS NOT NULL\) AND \(status = ANY/)
      ])
    }).pipe(Effect.provide(storage())))

  it.effect("a batch claim of a backlog updates every row it takes in place (HOT)", () =>
    Effect.gen(function*() {
      const { db } = yield* PostgresClient.PostgresClient
      const owner = yield* seedOwner(1)
      const store = yield* ExecutionStore.ExecutionStore
      // Inserted together (grouped), so the rows a claim takes share their pages.
      yield* Effect.forEach(Array.from({ length: 120 }, (_, i) => i + 1), (n) => store.insert(queued(owner, n)), {
        concurrency: "unbounded",
        discard: true
      })
      const counts = yield* Effect.promise(() =>
        // One transaction: a backend's own counts of it (pending until it ends) are this claim's alone.
        db.transaction().execute(async (trx) => {
          const claimed = await sql<{ n: number }>`SELECT count(*)::integer AS n
            FROM appexec_claim_executions('', 120, 0, 'a', ${LEASE}::bigint, NULL)`.execute(trx)
          const { rows: [row] } = await sql<{ updated: number; hot: number }>`SELECT
              pg_stat_get_xact_tuples_updated('executions'::regclass)::integer AS updated,
              pg_stat_get_xact_tuples_hot_updated('executions'::regclass)::integer AS hot`.execute(trx)
          return { claimed: claimed.rows[0]!.n, ...row! }
        })
      )
      // Before 0019 (the lease end in the open index, full pages): none of them.
      expect(counts).toEqual({ claimed: 120, updated: 120, hot: 120 })
    }).pipe(Effect.provide(storage())))

  it.effect("a worker's look for cancels reads the unfinished executions with a request alone", () =>
    Effect.gen(function*() {
      const { db } = yield* PostgresClient.PostgresClient
      const owner = yield* seedOwner(1)
      const store = yield* ExecutionStore.ExecutionStore
      yield* Effect.forEach(Array.from({ length: 2_000 }, (_, i) => i + 1), (n) => store.insert(queued(owner, n)), {
        concurrency: 64,
        discard: true
      })
      const plan = yield* Effect.promise(() =>
        db.connection().execute(async (connection) => {
          await sql`ANALYZE executions`.execute(connection)
          // The statement of `SqlExecutionQueue.cancelRequested`, planned as a prepared statement
          // is once it is reused (its generic plan).
          await sql`SET plan_cache_mode = force_generic_plan`.execute(connection)
          await sql.raw(`PREPARE cancels (text, bigint) AS SELECT execution_id FROM executions
            WHERE status IN ('queued', 'running') AND lease_worker = $1 AND lease_expires_at > $2
              AND cancel_requested_at IS NOT NULL`).execute(connection)
          const { rows } = await sql<{ "QUERY PLAN": string }>`EXPLAIN EXECUTE cancels('a', 0)`.execute(connection)
          await sql`DEALLOCATE cancels`.execute(connection)
          await sql`RESET plan_cache_mode`.execute(connection)
          return rows.map((row) => row["QUERY PLAN"]).join("\n")
        })
      )
      expect(plan).toMatch(/Index Scan using executions_cancel_requested/)
    }).pipe(Effect.provide(storage())))
})
