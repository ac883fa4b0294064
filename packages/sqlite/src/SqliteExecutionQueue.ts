/**
 * `ExecutionQueue` on SQLite. The lease lives on the execution's row (`lease_worker`,
 * `lease_token`, `lease_expires_at`); "now" is read from `Clock` and bound as a parameter.
 *
 * A claim is one `UPDATE … WHERE seq = (oldest claimable) RETURNING *` inside `BEGIN IMMEDIATE`:
 * the write lock is taken before the oldest claimable row is chosen, so two connections, in one
 * process or in two, never claim the same execution.
 */
import { ExecutionId } from "@appexec/api/Ids"
import { Errors, ExecutionQueue } from "@appexec/core"
import { Clock, Effect, Layer, Option } from "effect"
import { sql } from "kysely"
import { fromRow, leaseOf } from "./internal/ExecutionRows.js"
import * as PreparedQuery from "./internal/PreparedQuery.js"
import { WorkSignal } from "./internal/WorkSignal.js"
import { SqliteClient } from "./SqliteClient.js"

/** The queue over the instance's connection; releases wake this process's idle workers. */
export const make = Effect.gen(function*() {
  const client = yield* SqliteClient
  const signal = yield* WorkSignal
  const db = client.builder

  const claim = PreparedQuery.make((p: PreparedQuery.Param<{ workerId: string; now: number; expiresAt: number }>) =>
    db
      .updateTable("executions")
      .set((eb) => ({
        claims: eb("claims", "+", 1),
        attempts: eb("attempts", "+", 1),
        lease_token: eb("claims", "+", 1),
        lease_worker: p("workerId"),
        lease_expires_at: p("expiresAt")
      }))
      .where("seq", "=", (eb) =>
        eb
          .selectFrom("executions")
          .select("seq")
          // Literals, not parameters: only then can SQLite use the partial index `executions_open`.
          .where("status", "in", [sql.lit("queued"), sql.lit("running")])
          .where((w) => w.or([w("lease_expires_at", "is", null), w("lease_expires_at", "<=", p("now"))]))
          .orderBy("seq")
          .limit(1))
      .returningAll()
  )
  type Fence = { executionId: string; token: number; workerId: string }
  const renew = PreparedQuery.make((p: PreparedQuery.Param<Fence & { now: number; expiresAt: number }>) =>
    db
      .updateTable("executions")
      .set({ lease_expires_at: p("expiresAt") })
      .where("execution_id", "=", p("executionId"))
      .where("lease_token", "=", p("token"))
      .where("lease_worker", "=", p("workerId"))
      .where("lease_expires_at", ">", p("now"))
  )
  const release = PreparedQuery.make((p: PreparedQuery.Param<Fence>) =>
    db
      .updateTable("executions")
      .set((eb) => ({
        lease_worker: null,
        lease_token: null,
        lease_expires_at: null,
        attempts: eb("attempts", "-", 1)
      }))
      .where("execution_id", "=", p("executionId"))
      .where("lease_token", "=", p("token"))
      .where("lease_worker", "=", p("workerId"))
  )

  const canceled = PreparedQuery.make((p: PreparedQuery.Param<{ workerId: string; now: number }>) =>
    db
      .selectFrom("executions")
      .select("execution_id")
      .where("lease_worker", "=", p("workerId"))
      .where("lease_expires_at", ">", p("now"))
      .where("cancel_requested_at", "is not", null)
      .where("status", "in", [sql.lit("queued"), sql.lit("running")])
  )

  const service: ExecutionQueue.ExecutionQueue["Type"] = {
    claim: Effect.fn("SqliteExecutionQueue.claim")((workerId, leaseMs) =>
      Effect.gen(function*() {
        const now = yield* Clock.currentTimeMillis
        const row = yield* client.transaction("claim execution", (c) =>
          c.get(claim.bind({ workerId, now, expiresAt: now + leaseMs })))
        if (row === undefined) {
          return Option.none()
        }
        const execution = yield* fromRow(row)
        return Option.some({ execution, lease: leaseOf(execution, row) })
      })
    ),
    renew: Effect.fn("SqliteExecutionQueue.renew")((lease, leaseMs) =>
      Effect.gen(function*() {
        const now = yield* Clock.currentTimeMillis
        const changed = yield* client.execute("renew lease", (c) =>
          c.run(renew.bind({ ...lease, now, expiresAt: now + leaseMs })))
        if (changed === 0) {
          return yield* new Errors.LeaseLost({ executionId: lease.executionId })
        }
        return { ...lease, expiresAt: now + leaseMs }
      })
    ),
    release: Effect.fn("SqliteExecutionQueue.release")((lease) =>
      Effect.gen(function*() {
        const changed = yield* client.execute("release lease", (c) => c.run(release.bind(lease)))
        if (changed > 0) yield* signal.notify
      })
    ),
    cancelRequested: Effect.fn("SqliteExecutionQueue.cancelRequested")((workerId) =>
      Effect.flatMap(Clock.currentTimeMillis, (now) =>
        client.execute(
          "list cancel requests",
          (c) => c.all(canceled.bind({ workerId, now })).map((row) => ExecutionId.make(row.execution_id))
        ))
    ),
    awaitWork: signal.wait
  }
  return service
})

/** Layer of the queue; needs the connection and the work signal (see `SqliteStorage`). */
export const layer = Layer.effect(ExecutionQueue.ExecutionQueue, make)
