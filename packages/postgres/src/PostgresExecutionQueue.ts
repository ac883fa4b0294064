/**
 * `ExecutionQueue` on PostgreSQL. The lease lives on the execution's row (`lease_worker`,
 * `lease_token`, `lease_expires_at`); "now" is read from `Clock` and bound as a parameter, so
 * every process must keep its clock in sync (NTP), as the leases already assume.
 *
 * A claim is one statement: `UPDATE … WHERE seq = (SELECT seq … ORDER BY seq LIMIT 1 FOR UPDATE
 * SKIP LOCKED) RETURNING *`. Concurrent claimers, in one process or on many machines, each lock
 * a different row instead of queueing behind one, and none hands out an execution twice. Idle
 * workers wait on `LISTEN` (see `WorkSignal`); a release notifies them in every process.
 */
import { ExecutionId } from "@appexec/api/Ids"
import { Errors, ExecutionQueue } from "@appexec/core"
import { Clock, Effect, Layer, Option } from "effect"
import { sql } from "kysely"
import { fromRow, leaseOf } from "./internal/ExecutionRows.js"
import { WorkSignal } from "./internal/WorkSignal.js"
import { PostgresClient, workChannel } from "./PostgresClient.js"

/** The queue over the instance's pool and its listening connection. */
export const make = Effect.gen(function*() {
  const client = yield* PostgresClient
  const signal = yield* WorkSignal
  const channel = workChannel(client.schema)

  const service: ExecutionQueue.ExecutionQueue["Type"] = {
    claim: Effect.fn("PostgresExecutionQueue.claim")((workerId, leaseMs) =>
      Effect.gen(function*() {
        const now = yield* Clock.currentTimeMillis
        const row = yield* client.execute("claim execution", (db) =>
          db
            .updateTable("executions")
            .set((eb) => ({
              claims: eb("claims", "+", 1),
              attempts: eb("attempts", "+", 1),
              lease_token: eb("claims", "+", 1),
              lease_worker: workerId,
              lease_expires_at: now + leaseMs
            }))
            .where("seq", "=", (eb) =>
              eb
                .selectFrom("executions")
                .select("seq")
                // Literals, not parameters: only then does the planner use the partial index `executions_open`.
                .where("status", "in", [sql.lit("queued"), sql.lit("running")])
                .where((w) => w.or([w("lease_expires_at", "is", null), w("lease_expires_at", "<=", now)]))
                .orderBy("seq")
                .limit(1)
                .forUpdate()
                .skipLocked())
            .returningAll()
            .executeTakeFirst())
        if (row === undefined) return Option.none()
        const execution = yield* fromRow(row)
        return Option.some({ execution, lease: leaseOf(execution, row) })
      })
    ),
    renew: Effect.fn("PostgresExecutionQueue.renew")((lease, leaseMs) =>
      Effect.gen(function*() {
        const now = yield* Clock.currentTimeMillis
        const result = yield* client.execute("renew lease", (db) =>
          db
            .updateTable("executions")
            .set({ lease_expires_at: now + leaseMs })
            .where("execution_id", "=", lease.executionId)
            .where("lease_token", "=", lease.token)
            .where("lease_worker", "=", lease.workerId)
            .where("lease_expires_at", ">", now)
            .executeTakeFirst())
        if (result.numUpdatedRows === 0n) {
          return yield* new Errors.LeaseLost({ executionId: lease.executionId })
        }
        return { ...lease, expiresAt: now + leaseMs }
      })
    ),
    release: Effect.fn("PostgresExecutionQueue.release")((lease) =>
      client
        .execute("release lease", (db) =>
          db
            .with("released", (qb) =>
              qb
                .updateTable("executions")
                .set((eb) => ({
                  lease_worker: null,
                  lease_token: null,
                  lease_expires_at: null,
                  attempts: eb("attempts", "-", 1)
                }))
                .where("execution_id", "=", lease.executionId)
                .where("lease_token", "=", lease.token)
                .where("lease_worker", "=", lease.workerId)
                .returning("execution_id"))
            .selectFrom("released")
            // Idle workers wake, in every process.
            .select(sql<string>`pg_notify(${channel}, '')`.as("notified"))
            .execute())
        .pipe(Effect.asVoid)
    ),
    cancelRequested: Effect.fn("PostgresExecutionQueue.cancelRequested")((workerId) =>
      Effect.flatMap(Clock.currentTimeMillis, (now) =>
        client
          .execute("list cancel requests", (db) =>
            db
              .selectFrom("executions")
              .select("execution_id")
              .where("status", "in", [sql.lit("queued"), sql.lit("running")])
              .where("lease_worker", "=", workerId)
              .where("lease_expires_at", ">", now)
              .where("cancel_requested_at", "is not", null)
              .execute())
          .pipe(Effect.map((rows) => rows.map((row) => ExecutionId.make(row.execution_id)))))
    ),
    awaitWork: signal.wait
  }
  return service
})

/** Layer of the queue; needs the pool and the work signal (see `PostgresStorage`). */
export const layer = Layer.effect(ExecutionQueue.ExecutionQueue, make)
