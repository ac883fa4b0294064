/**
 * `ExecutionQueue` on PostgreSQL. The lease lives on the execution's row (`lease_worker`,
 * `lease_token`, `lease_expires_at`); "now" is read from `Clock` and bound as a parameter, so
 * every process must keep its clock in sync (NTP), as the leases already assume.
 *
 * A claim of a whole batch is one statement and one round trip: `appexec_claim_executions`
 * (migration 0003) takes each row with `UPDATE … WHERE seq = (SELECT seq … LIMIT 1 FOR UPDATE
 * SKIP LOCKED) RETURNING …` inside the server, as a prepared statement. Concurrent claimers, in
 * one process or on many machines, each lock a different row instead of queueing behind one, and
 * none hands out an execution twice. Claims take the workspaces with claimable work in turn (in
 * id order, from where this queue's previous claim stopped), in queue order within each (priority,
 * then age: `ExecutionRecord.queueAtOf`); under caps (per workspace, per app), a batch runs in one
 * transaction that counts live leases under the deployment's claim lock. Claims and renewals do not wait for their commit to
 * be flushed (`synchronous_commit = off` for their transaction alone): lost in a crash of the
 * database, a claim leaves its execution claimable (it runs again) and a renewal lets its lease
 * run out sooner, both of which the queue recovers from by design. Idle workers wait on `LISTEN` (see
 * `WorkSignal`); a release notifies them in every process.
 */
import { Errors, ExecutionQueue } from "@appexec/core"
import { SqlExecutionQueue } from "@appexec/sql"
import { claimsOf, executionColumns, type ExecutionRow } from "@appexec/sql/ExecutionRows"
import type { Tables } from "@appexec/sql/SqlTables"
import { Clock, Effect, Layer } from "effect"
import { type ExpressionBuilder, type Kysely, sql } from "kysely"
import { WorkSignal } from "./internal/WorkSignal.js"
import { PostgresClient, workChannel } from "./PostgresClient.js"

/** The queue over the instance's pool and its listening connection. */
export const make = Effect.gen(function*() {
  const client = yield* PostgresClient
  const signal = yield* WorkSignal
  const channel = workChannel(client.schema)

  /** Where this queue's previous claim stopped in the round robin over workspaces. */
  let cursor = ""

  /**
   * Claimable executions (queued, or running with no live lease), of workspaces after `after`, in
   * claim order, of the workflow versions `workflows` (all when absent) and not of `fullApps`.
   */
  const claimable = (
    db: Kysely<Tables>,
    after: string,
    now: number,
    workflows: ReadonlyArray<string> | undefined,
    caps: ExecutionQueue.ClaimCaps
  ) => {
    let query = db
      .selectFrom("executions")
      .select(["seq", "workspace_id", "app_id", "workflow_id"])
      // Literals, not parameters: only then does the planner use the partial index.
      .where("status", "in", [sql.lit("queued"), sql.lit("running")])
      .where("workspace_id", ">", after)
      .where((w) => w.or([w("lease_expires_at", "is", null), w("lease_expires_at", "<=", now)]))
    if (workflows !== undefined) query = query.where(sql<boolean>`workflow_id = ANY(${[...workflows]}::text[])`)
    if (caps.fullApps.length > 0) {
      query = query.where(sql<boolean>`NOT (app_id = ANY(${[...caps.fullApps]}::text[]))`)
    }
    if (caps.fullWorkflows.length > 0) {
      query = query.where(sql<boolean>`NOT (workflow_id = ANY(${[...caps.fullWorkflows]}::text[]))`)
    }
    return query
      .orderBy("workspace_id")
      .orderBy("queue_at")
      .orderBy("seq")
      .limit(1)
      .forUpdate()
      .skipLocked()
  }

  /** How many executions hold live leases, of a workspace, of an app, or of some workflow versions. */
  const liveOf = (
    db: Kysely<Tables>,
    column: "workspace_id" | "app_id" | "workflow_id",
    ids: string | ReadonlyArray<string>,
    now: number
  ) =>
    db
      .selectFrom("executions")
      .select((eb) => eb.fn.countAll<number>().as("n"))
      .where("status", "in", [sql.lit("queued"), sql.lit("running")])
      .where(
        typeof ids === "string"
          ? sql<boolean>`${sql.ref(column)} = ${ids}`
          : sql<boolean>`${sql.ref(column)} = ANY(${[...ids]}::text[])`
      )
      .where("lease_expires_at", ">", now)
      .executeTakeFirst()
      .then((row) => Number(row?.n ?? 0))

  /** The lease a claim writes, and the counters it moves (the run writes its start: core's `WorkerRun`). */
  const lease = (workerId: string, expiresAt: number) => (eb: ExpressionBuilder<Tables, "executions">) => ({
    claims: eb("claims", "+", 1),
    attempts: eb("attempts", "+", 1),
    lease_token: eb("claims", "+", 1),
    lease_worker: workerId,
    lease_expires_at: expiresAt
  })

  /**
   * Claims up to `limit` executions in one statement (`appexec_claim_executions`, migrations
   * 0003, 0004, 0012 and 0018: the round robin below, run in the server), as a prepared statement.
   * A batch that is not full ran out of work: the next claim starts a pass from the first workspace.
   */
  const claimUncapped = (
    limit: number,
    now: number,
    workerId: string,
    expiresAt: number,
    workflows: ReadonlyArray<string> | undefined
  ) =>
    client.prepared(
      "claim executions",
      sql<ExecutionRow>`SELECT ${sql.join(executionColumns.map((c) => sql.ref(c)))}
        FROM appexec_claim_executions(${cursor}, ${limit}::integer, ${now}::bigint, ${workerId}, ${expiresAt}::bigint,
          ${workflows === undefined ? null : [...workflows]}::text[])`
        .compile(client.db)
    ).pipe(Effect.map(({ rows }) => {
      cursor = rows.length < limit ? "" : rows[rows.length - 1]!.workspace_id
      return rows
    }))

  /** Claims the execution `seq`, locked by this transaction already. */
  const take = (db: Kysely<Tables>, seq: number, workerId: string, expiresAt: number) =>
    db
      .updateTable("executions")
      .set(lease(workerId, expiresAt))
      .where("seq", "=", seq)
      .returningAll()
      .executeTakeFirst()

  /**
   * A claim under caps, in one transaction that holds the deployment's claim lock
   * (`pg_advisory_xact_lock`) while it counts live leases and takes rows, so claimers in other
   * processes cannot pass a cap together: the workspaces in turn from `cursor`, starting over at the
   * first until a whole pass finds nothing more; an app at its cap leaves the claim's filter, so the
   * next execution of its workspace is taken instead.
   */
  const claimCapped = (workerId: string, now: number, expiresAt: number, options: ExecutionQueue.ClaimOptions) =>
    client.transaction("claim executions", async (trx) => {
      // A claim lost in a crash of the database only leaves its executions claimable.
      await sql`SELECT set_config('synchronous_commit', 'off', true)`.execute(trx)
      await sql`SELECT pg_advisory_xact_lock(hashtext(${`appexec.claims.${client.schema}`}))`.execute(trx)
      const caps = new ExecutionQueue.ClaimCaps(options)
      for (const count of caps.counts) {
        caps.start(
          count,
          count._tag === "app"
            ? await liveOf(trx, "app_id", count.appId, now)
            : await liveOf(trx, "workflow_id", count.workflows, now)
        )
      }
      const running = new Map<string, number>()
      const rows: Array<ExecutionRow> = []
      let claimedThisPass = 0
      let passes = 0
      while (rows.length < options.limit) {
        const found = await claimable(trx, cursor, now, options.workflows, caps).executeTakeFirst()
        if (found === undefined) {
          if (cursor === "" || (passes > 0 && claimedThisPass === 0)) break
          passes += 1
          claimedThisPass = 0
          cursor = ""
          continue
        }
        const workspace = found.workspace_id
        cursor = workspace
        const cap = ExecutionQueue.workspaceCap(options, workspace)
        if (cap !== undefined) {
          const count = running.get(workspace) ?? await liveOf(trx, "workspace_id", workspace, now)
          running.set(workspace, count)
          if (count >= cap) continue
          running.set(workspace, count + 1)
        }
        const row = await take(trx, found.seq, workerId, expiresAt)
        if (row !== undefined) rows.push(row)
        claimedThisPass += 1
        caps.took(found.app_id, found.workflow_id)
      }
      return rows
    })

  const claimBatch = (workerId: string, leaseMs: number, options: ExecutionQueue.ClaimOptions) =>
    Effect.gen(function*() {
      const now = yield* Clock.currentTimeMillis
      const expiresAt = now + leaseMs
      const rows = yield* ExecutionQueue.isCapped(options)
        ? claimCapped(workerId, now, expiresAt, options)
        // No cap: one statement (each row locked, skipped by others, taken).
        : claimUncapped(options.limit, now, workerId, expiresAt, options.workflows)
      return yield* claimsOf(rows)
    })

  const neutral = yield* SqlExecutionQueue.make
  const service: ExecutionQueue.ExecutionQueue["Type"] = {
    ...neutral,
    // No span per claim (as SQLite's): claims and saves are the worker's hot path.
    claimBatch,
    renew: Effect.fn("PostgresExecutionQueue.renew")((lease, leaseMs) =>
      Effect.gen(function*() {
        const now = yield* Clock.currentTimeMillis
        // Not flushed: a renewal lost in a crash of the database only lets the lease run out sooner.
        const result = yield* client.prepared(
          "renew lease",
          sql`UPDATE executions SET lease_expires_at = ${now + leaseMs}::bigint
            FROM (SELECT set_config('synchronous_commit', 'off', true)) AS unflushed
            WHERE execution_id = ${lease.executionId} AND lease_token = ${lease.token}::bigint
              AND lease_worker = ${lease.workerId} AND lease_expires_at > ${now}::bigint`.compile(client.db)
        )
        if (result.rowCount === 0) {
          return yield* new Errors.LeaseLost({ executionId: lease.executionId })
        }
        return { ...lease, expiresAt: now + leaseMs }
      })
    ),
    renewAll: Effect.fn("PostgresExecutionQueue.renewAll")((leases, leaseMs) =>
      Effect.gen(function*() {
        if (leases.length === 0) return []
        const now = yield* Clock.currentTimeMillis
        // One statement for every lease, not flushed: a renewal lost in a crash of the database
        // only lets its lease run out sooner.
        const ids = leases.map((lease) => lease.executionId)
        const tokens = leases.map((lease) => lease.token)
        const workers = leases.map((lease) => lease.workerId)
        const { rows } = yield* client.execute("renew leases", (db) =>
          sql<{ execution_id: string }>`UPDATE executions e SET lease_expires_at = ${now + leaseMs}::bigint
            FROM unnest(${ids}::text[], ${tokens}::bigint[], ${workers}::text[]) AS l(execution_id, token, worker),
              (SELECT set_config('synchronous_commit', 'off', true)) AS unflushed
            WHERE e.execution_id = l.execution_id AND e.lease_token = l.token AND e.lease_worker = l.worker
              AND e.lease_expires_at > ${now}::bigint
            RETURNING e.execution_id`.execute(db))
        const renewed = new Set(rows.map((row) =>
          row.execution_id
        ))
        return leases.filter((lease) => renewed.has(lease.executionId)).map((lease) => ({
          ...lease,
          expiresAt: now + leaseMs
        }))
      })
    ),
    release: Effect.fn("PostgresExecutionQueue.release")((lease) =>
      client
        .execute("release lease", (db) =>
          db
            .with("released", () => SqlExecutionQueue.release(db, lease).returning("execution_id"))
            .selectFrom("released")
            // Idle workers wake, in every process.
            .select(sql<string>`pg_notify(${channel}, '')`.as("notified"))
            .execute())
        .pipe(Effect.asVoid)
    ),
    awaitWork: signal.wait
  }
  return service
})

/** Layer of the queue; needs the pool and the work signal (see `PostgresStorage`). */
export const layer = Layer.effect(ExecutionQueue.ExecutionQueue, make)
