/**
 * The PostgreSQL queue's round trips: a batch claim in one statement (a workspace's backlog
 * taken in one `UPDATE` when it is alone), claims and renewals that leave the connection's later
 * commits flushed, grouped saves fenced row by row, grouped inserts in acceptance order, the
 * claim function added to a database made before it, claims that read the queue through its
 * index once the table has statistics, and inserts that lock no row of the app they start. Then
 * migration 0019: a claim rewrites its rows in place (a HOT update, no new index entry), because
 * no index of `executions` holds a lease column and its pages keep room for the new versions; a
 * worker's look for cancels reads the executions with a request alone.
 */
import { Ids } from "@appexec/api"
import { ExecutionQueue, type ExecutionRecord, ExecutionStore, WebhookOutbox } from "@appexec/core"
import { PostgresClient, PostgresMigrations, PostgresStorage } from "@appexec/postgres"
import { type Owner, seedOwner, uuid } from "@appexec/testing/contracts"
import { describe, expect, it } from "@effect/vitest"
import { Context, Effect, Either, Fiber, Layer, Option } from "effect"
import { type Kysely, sql } from "kysely"
import pg from "pg"
import * as TestDatabase from "./support/TestDatabase.js"

const LEASE = 30_000
const database = TestDatabase.create("queue")
let schemas = 0

/** Storage on a new schema of the test database, with the pool itself. */
const storage = (options: Partial<PostgresStorage.Options> = {}, schema = `q${++schemas}`) =>
  Layer.unwrapEffect(
    Effect.map(Effect.promise(() => database), (connectionString) =>
      PostgresStorage.layerFromClient.pipe(
        Layer.provideMerge(PostgresClient.layer({ connectionString, schema, poolSize: 4, ...options }))
      ))
  )

/** Queued execution `n` of `owner`, its inputs with what array literals escape (quotes, braces, a backslash, a comma). */
const queued = (owner: Owner, n: number): ExecutionRecord.ExecutionRecord => ({
  executionId: Ids.ExecutionId.make(uuid(5, n)),
  workflowId: owner.workflowId,
  appId: owner.appId,
  workspaceId: owner.workspaceId,
  userId: owner.userId,
  status: "queued",
  inputs: { prompt: `prompt ${n}`, "quote \" and {brace}": "välue ✓ \\ ," },
  outputs: [{ id: "out", label: "Out", type: "pending", value: null, status: "pending", error: null }],
  errorMessage: null,
  webhookUrl: `https://example.com/hook/${n}`,
  createdAt: n,
  startedAt: null,
  completedAt: null
})

const numbers = (from: number, to: number) => Array.from({ length: to - from + 1 }, (_, i) => from + i)

const ids = (claims: ReadonlyArray<ExecutionQueue.Claim>) => claims.map((c) => c.execution.executionId)

describe("PostgreSQL queue round trips", () => {
  it.effect("one workspace's backlog: concurrent batch claims take disjoint runs of it, oldest first", () =>
    Effect.gen(function*() {
      const owner = yield* seedOwner(1)
      const store = yield* ExecutionStore.ExecutionStore
      const queue = yield* ExecutionQueue.ExecutionQueue
      for (const n of numbers(1, 40)) yield* store.insert(queued(owner, n))
      const [a, b] = yield* Effect.all([
        queue.claimBatch("a", LEASE, { limit: 16 }),
        queue.claimBatch("b", LEASE, { limit: 16 })
      ], { concurrency: 2 })
      expect(a.length).toBe(16)
      expect(b.length).toBe(16)
      expect(new Set([...ids(a), ...ids(b)]).size).toBe(32)
      for (const batch of [a, b]) {
        const created = batch.map((c) => c.execution.createdAt)
        expect(created).toEqual([...created].sort((x, y) => x - y))
      }
      const rest = yield* queue.claimBatch("c", LEASE, { limit: 16 })
      const taken = new Set([...ids(a), ...ids(b)])
      expect(ids(rest)).toEqual(numbers(1, 40).map((n) => queued(owner, n).executionId).filter((id) => !taken.has(id)))
      expect(yield* queue.claimBatch("d", LEASE, { limit: 16 })).toEqual([])
    }).pipe(Effect.provide(storage())))

  it.effect("a batch claim across workspaces still takes them in turn, then the rest of the one left", () =>
    Effect.gen(function*() {
      const one = yield* seedOwner(1)
      const two = yield* seedOwner(2)
      const store = yield* ExecutionStore.ExecutionStore
      const queue = yield* ExecutionQueue.ExecutionQueue
      for (const n of numbers(1, 5)) yield* store.insert(queued(one, n))
      yield* store.insert(queued(two, 6))
      const batch = yield* queue.claimBatch("a", LEASE, { limit: 10 })
      expect(ids(batch)).toEqual([1, 6, 2, 3, 4, 5].map((n) => queued(n === 6 ? two : one, n).executionId))
    }).pipe(Effect.provide(storage())))

  it.effect("a claim reads the queue through its index, with the table's statistics taken and its plans cached", () =>
    Effect.gen(function*() {
      const { db } = yield* PostgresClient.PostgresClient
      const owner = yield* seedOwner(1)
      const store = yield* ExecutionStore.ExecutionStore
      yield* Effect.forEach(numbers(1, 2_000), (n) => store.insert(queued(owner, n)), {
        concurrency: 64,
        discard: true
      })
      // Statistics taken while the backlog is queued, as autovacuum's analyze takes them under load;
      // then most of it runs, and the oldest rows are finished ones.
      yield* Effect.promise(async () => {
        await sql`ANALYZE executions`.execute(db)
        await sql`UPDATE executions SET status = 'completed' WHERE seq <= (SELECT min(seq) + 1499 FROM executions)`
          .execute(db)
      })
      const read = yield* Effect.promise(() =>
        // One transaction: a backend reports its statistics only between transactions, so its own
        // count (pending) moves by this transaction's scans alone.
        db.transaction().execute(async (trx) => {
          const count = async () =>
            (await sql<{ scans: number; fetched: number }>`SELECT
                pg_stat_get_xact_numscans('executions'::regclass)::integer AS scans,
                (SELECT sum(pg_stat_get_xact_tuples_returned(indexrelid)) FROM pg_index
                  WHERE indrelid = 'executions'::regclass)::integer AS fetched`
              .execute(trx)).rows[0]!
          const claim = sql<{ n: number }>`SELECT count(*)::integer AS n
            FROM appexec_claim_executions('', 4, 0, 'a', ${LEASE}::bigint, NULL)`
          // The first claim also marks the finished rows' old index entries dead (until a vacuum
          // removes them): that walk is once per table, not per claim.
          expect((await claim.execute(trx)).rows[0]!.n).toBe(4)
          const before = await count()
          // Past the five custom plans after which PostgreSQL may keep a generic one.
          for (let i = 0; i < 8; i++) expect((await claim.execute(trx)).rows[0]!.n).toBe(4)
          const after = await count()
          return { scans: after.scans - before.scans, fetched: after.fetched - before.fetched }
        })
      )
      // Not one sequential scan of the table, nor a walk through the finished rows: eight claims
      // of four read a few hundred index entries (migration 0004's function: eight scans of the
      // table and ~20,700 entries).
      expect(read.scans).toBe(0)
      expect(read.fetched).toBeLessThan(800)
    }).pipe(Effect.provide(storage())))

  it.effect("claims and renewals do not wait for their flush, and leave the connection's other commits flushed", () =>
    Effect.gen(function*() {
      const { db } = yield* PostgresClient.PostgresClient
      const owner = yield* seedOwner(1)
      const store = yield* ExecutionStore.ExecutionStore
      const queue = yield* ExecutionQueue.ExecutionQueue
      yield* store.insert(queued(owner, 1))
      const [claim] = yield* queue.claimBatch("a", LEASE, { limit: 4 })
      yield* queue.renew(claim!.lease, LEASE)
      // One connection: the claim and the renewal ran on the connection asked here.
      const setting = yield* Effect.promise(() =>
        sql<{ value: string }>`SELECT current_setting('synchronous_commit') AS value`.execute(db)
      )
      expect(setting.rows[0]!.value).toBe("on")
    }).pipe(Effect.provide(Layer.unwrapEffect(Effect.gen(function*() {
      // The test server flushes nothing; this database flushes by default, as a production one.
      const url = yield* Effect.promise(() => database)
      const name = `flushed_${++schemas}`
      yield* Effect.promise(async () => {
        const admin = new pg.Client({ connectionString: url })
        await admin.connect()
        await admin.query(`CREATE DATABASE ${name}`)
        await admin.query(`ALTER DATABASE ${name} SET synchronous_commit = on`)
        await admin.end()
      })
      const own = new URL(url)
      own.pathname = `/${name}`
      return PostgresStorage.layerFromClient.pipe(
        Layer.provideMerge(PostgresClient.layer({ connectionString: own.href, poolSize: 1 }))
      )
    })))))

  it.effect("saves that go together are fenced row by row; terminal ones insert their webhooks", () =>
    Effect.gen(function*() {
      const owner = yield* seedOwner(1)
      const store = yield* ExecutionStore.ExecutionStore
      const queue = yield* ExecutionQueue.ExecutionQueue
      const outbox = yield* WebhookOutbox.WebhookOutbox
      for (const n of numbers(1, 6)) yield* store.insert(queued(owner, n))
      const claims = yield* queue.claimBatch("a", LEASE, { limit: 6 })
      expect(claims.length).toBe(6)
      const results = yield* Effect.forEach(claims, ({ execution, lease }, i) => {
        // Every third save holds a lease that is not current.
        const held = i % 3 === 2 ? { ...lease, token: lease.token + 7 } : lease
        const done = {
          ...execution,
          status: "completed" as const,
          startedAt: 10,
          completedAt: 20,
          outputs: [{
            id: "out",
            label: "Out",
            type: "text" as const,
            value: `done ${i}`,
            status: "completed" as const,
            error: null
          }]
        }
        const entry: WebhookOutbox.OutboxEntry = {
          deliveryId: WebhookOutbox.DeliveryId.make(uuid(6, i)),
          executionId: execution.executionId,
          userId: execution.userId,
          url: execution.webhookUrl!,
          status: "pending",
          nextAttemptAt: 20,
          attempts: [],
          createdAt: 20
        }
        return Effect.either(
          store.save(
            i % 2 === 0 ? done : { ...execution, status: "running", startedAt: 10 },
            held,
            i % 2 === 0 ? entry : undefined
          )
        )
      }, { concurrency: "unbounded" })
      expect(results.map((r) => Either.isRight(r))).toEqual([true, true, false, true, true, false])
      for (const [i, { execution }] of claims.entries()) {
        const saved = yield* store.get(execution.executionId)
        const status = saved._tag === "Some" ? saved.value.status : "missing"
        expect(status).toBe(i % 3 === 2 ? "queued" : i % 2 === 0 ? "completed" : "running")
        const hooks = yield* outbox.forExecution(execution.executionId)
        expect(hooks.length).toBe(i % 3 !== 2 && i % 2 === 0 ? 1 : 0)
        if (status === "completed") expect(saved._tag === "Some" && saved.value.outputs[0]!.value).toBe(`done ${i}`)
      }
      // A finished execution's lease is cleared; a running one keeps its lease.
      expect(yield* queue.claimBatch("b", LEASE, { limit: 6 })).toEqual([])
    }).pipe(Effect.provide(storage())))

  it.effect("inserts made at once all land, in the order they were made, and wake the workers", () =>
    Effect.gen(function*() {
      const owner = yield* seedOwner(1)
      const store = yield* ExecutionStore.ExecutionStore
      const queue = yield* ExecutionQueue.ExecutionQueue
      const records = numbers(1, 50).map((n) => queued(owner, n))
      yield* Effect.forEach(records, (record) => store.insert(record), { concurrency: "unbounded", discard: true })
      yield* queue.awaitWork
      const claims = yield* queue.claimBatch("a", LEASE, { limit: 64 })
      expect(claims.map((c) => c.execution)).toEqual(records.map((record) => ({ ...record, attempt: 1 })))
    }).pipe(Effect.provide(storage())))

  it.effect("an insert locks no row of its app, workflow, user or workspace (migration 0013)", () =>
    Effect.gen(function*() {
      const owner = yield* seedOwner(1)
      const store = yield* ExecutionStore.ExecutionStore
      const client = yield* PostgresClient.PostgresClient
      // A row locked by a foreign key's check (`FOR KEY SHARE`) takes the locker's id as its `xmax`.
      const lockers = client.execute("lockers", (db) =>
        sql<{ row: string; xmax: string }>`
          SELECT 'app' AS row, xmax::text FROM apps WHERE app_id = ${owner.appId}
          UNION ALL SELECT 'workflow', xmax::text FROM workflow_versions WHERE workflow_id = ${owner.workflowId}
          UNION ALL SELECT 'user', xmax::text FROM users WHERE user_id = ${owner.userId}
          UNION ALL SELECT 'workspace', xmax::text FROM workspaces WHERE workspace_id = ${owner.workspaceId}
          ORDER BY row`.execute(db)).pipe(Effect.map(({ rows }) => rows))
      const before = yield* lockers
      expect(before.map((r) => r.row)).toEqual(["app", "user", "workflow", "workspace"])
      yield* Effect.forEach(numbers(1, 8), (n) => store.insert(queued(owner, n)), {
        concurrency: "unbounded",
        discard: true
      })
      expect(yield* lockers).toEqual(before)
      const executions = yield* client.execute(
        "count",
        (db) => sql<{ n: number }>`SELECT count(*)::int AS n FROM executions`.execute(db)
      )
      expect(executions.rows).toEqual([{ n: 8 }])
    }).pipe(Effect.provide(storage())))

  it.effect("an insert the database refuses fails alone, not the inserts that went with it", () =>
    Effect.gen(function*() {
      const owner = yield* seedOwner(1)
      const store = yield* ExecutionStore.ExecutionStore
      const queue = yield* ExecutionQueue.ExecutionQueue
      const records = numbers(1, 12).map((n) => queued(owner, n))
      // PostgreSQL text cannot hold NUL.
      const bad = { ...records[5]!, webhookUrl: "https://example.com/\u0000" }
      const results = yield* Effect.forEach(
        records.map((record, i) => (i === 5 ? bad : record)),
        (record) => Effect.either(store.insert(record)),
        { concurrency: "unbounded" }
      )
      expect(results.map((r) => Either.isRight(r))).toEqual(records.map((_, i) => i !== 5))
      const claims = yield* queue.claimBatch("a", LEASE, { limit: 64 })
      expect(claims.map((c) => c.execution)).toEqual(
        records.filter((_, i) => i !== 5).map((record) => ({ ...record, attempt: 1 }))
      )
    }).pipe(Effect.provide(storage())))

  it.effect("saveAll: a save the database refuses fails alone, not the saves that went with it", () =>
    Effect.gen(function*() {
      const owner = yield* seedOwner(1)
      const store = yield* ExecutionStore.ExecutionStore
      const queue = yield* ExecutionQueue.ExecutionQueue
      for (const n of numbers(1, 6)) yield* store.insert(queued(owner, n))
      const claims = yield* queue.claimBatch("a", LEASE, { limit: 6 })
      const results = yield* ExecutionStore.saveAllOf(store)!(claims.map(({ execution, lease }, i) => ({
        // PostgreSQL text cannot hold NUL.
        record: {
          ...execution,
          status: "failed",
          startedAt: 10,
          completedAt: 20,
          errorMessage: i === 2 ? "\u0000" : "x"
        },
        lease
      })))
      expect(results.map((r) => Either.isLeft(r) && r.left._tag)).toEqual([
        false,
        false,
        "StorageError",
        false,
        false,
        false
      ])
      const statuses = yield* Effect.forEach(
        claims,
        ({ execution }) => Effect.map(store.get(execution.executionId), (r) => Option.getOrThrow(r).status)
      )
      expect(statuses).toEqual(["failed", "failed", "queued", "failed", "failed", "failed"])
    }).pipe(Effect.provide(storage())))

  it.effect("a database made before the claim function gets it on open", () =>
    Effect.gen(function*() {
      const schema = `old${++schemas}`
      const url = yield* Effect.promise(() => database)
      yield* Effect.promise(async () => {
        const pool = new pg.Pool({ connectionString: url, options: `-c search_path=${schema}` })
        const { Kysely, PostgresDialect } = await import("kysely")
        const db: Kysely<unknown> = new Kysely({ dialect: new PostgresDialect({ pool }) })
        await sql.raw(`CREATE SCHEMA ${schema}`).execute(db)
        const result = await PostgresMigrations.migrateTo(db, schema, "0002_retention_and_tracing")
        await db.destroy()
        if (result.error !== undefined) throw result.error
      })
      yield* Effect.gen(function*() {
        const owner = yield* seedOwner(1)
        const store = yield* ExecutionStore.ExecutionStore
        const queue = yield* ExecutionQueue.ExecutionQueue
        yield* store.insert(queued(owner, 1))
        expect(ids(yield* queue.claimBatch("a", LEASE, { limit: 4 }))).toEqual([queued(owner, 1).executionId])
      }).pipe(Effect.provide(storage({}, schema)))
    }))

  it.live("a queued execution canceled in one process wakes the webhook dispatchers of another at once", () =>
    Effect.gen(function*() {
      const schema = `w${++schemas}`
      // Two processes on one schema: `api` cancels, `worker` waits to dispatch.
      const worker = yield* Layer.build(storage({}, schema))
      const api = yield* Layer.build(storage({}, schema))
      const { owner, record } = yield* Effect.gen(function*() {
        const owner = yield* seedOwner(1)
        const record = queued(owner, 1)
        yield* (yield* ExecutionStore.ExecutionStore).insert(record)
        return { owner, record }
      }).pipe(Effect.provide(api))
      const outbox = Context.get(worker, WebhookOutbox.WebhookOutbox)
      expect(outbox.awaitDue).toBeDefined()
      const waiting = yield* Effect.fork(outbox.awaitDue!)
      yield* Effect.sleep("100 millis")
      expect(Option.isNone(yield* Fiber.poll(waiting))).toBe(true)
      const failed: ExecutionRecord.ExecutionRecord = {
        ...record,
        status: "failed",
        errorMessage: "canceled",
        completedAt: 5
      }
      const entry: WebhookOutbox.OutboxEntry = {
        deliveryId: WebhookOutbox.DeliveryId.make(uuid(6, 1)),
        executionId: record.executionId,
        userId: owner.userId,
        url: record.webhookUrl!,
        status: "pending",
        nextAttemptAt: 5,
        attempts: [],
        createdAt: 5
      }
      const canceled = yield* Effect.flatMap(
        ExecutionStore.ExecutionStore,
        (store) => store.cancelQueued(failed, 5, entry)
      )
        .pipe(Effect.provide(api))
      expect(canceled).toBe(true)
      // Well before the dispatchers' poll (1 s).
      expect(Option.isSome(yield* Effect.timeoutOption(Fiber.join(waiting), "900 millis"))).toBe(true)
    }).pipe(Effect.scoped))
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
      // Before 0019 (the lease end in the open index, full pages): none of them. A claimed version is
      // longer than the queued one (the lease's worker, token and end), so the last row of a page
      // may not fit beside the others.
      expect(counts.claimed).toBe(120)
      expect(counts.updated).toBe(120)
      expect(counts.hot).toBeGreaterThan(100)
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
