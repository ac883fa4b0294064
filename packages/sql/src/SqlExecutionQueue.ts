/**
 * `ExecutionQueue` on SQL, the part every dialect shares: the cancel requests for a worker's
 * live leases, and the release of a lease. Claims and renewals are the adapter's own statements
 * (the claim's locking, its round robin and its commit differ by dialect), and so is the wake-up
 * that goes with a release.
 */
import { ExecutionId } from "@appexec/api/Ids"
import type { ExecutionQueue } from "@appexec/core"
import { Clock, Effect } from "effect"
import type { Kysely } from "kysely"
import * as PreparedQuery from "./PreparedQuery.js"
import { OPEN } from "./SqlExecutionStore.js"
import { SqlRunner } from "./SqlRunner.js"
import type { Tables } from "./SqlTables.js"

/** What fences a lease's writes: the execution, and the worker and token of its claim. */
export interface Fence {
  readonly executionId: string
  readonly workerId: string
  readonly token: number
}

/**
 * The release of a lease (a graceful shutdown gives the execution back): clears the lease and
 * takes its claim out of `attempts` (what `maxAttempts` bounds; `claims`, the attempt shown, keeps
 * it), only while the lease is still `fence`'s; the execution is claimable at once. The adapter runs it with its wake-up (in the same statement or after it).
 */
export const release = (db: Kysely<Tables>, fence: Fence) =>
  db
    .updateTable("executions")
    .set((eb) => ({
      lease_worker: null,
      lease_token: null,
      lease_expires_at: null,
      attempts: eb("attempts", "-", 1)
    }))
    .where("execution_id", "=", fence.executionId)
    .where("lease_token", "=", fence.token)
    .where("lease_worker", "=", fence.workerId)

/** The dialect-neutral part of the queue. */
export type Neutral = Pick<ExecutionQueue.ExecutionQueue["Type"], "cancelRequested">

/** The dialect-neutral part of the queue, over the runner. */
export const make = Effect.gen(function*() {
  const runner = yield* SqlRunner
  const canceled = PreparedQuery.make((p: PreparedQuery.Param<{ workerId: string; now: number }>) =>
    runner.builder
      .selectFrom("executions")
      .select("execution_id")
      .where("status", "in", OPEN)
      .where("lease_worker", "=", p("workerId"))
      .where("lease_expires_at", ">", p("now"))
      .where("cancel_requested_at", "is not", null)
  )
  const service: Neutral = {
    cancelRequested: Effect.fn("SqlExecutionQueue.cancelRequested")(function*(workerId) {
      const now = yield* Clock.currentTimeMillis
      const rows = yield* runner.all("list cancel requests", canceled.bind({ workerId, now }))
      return rows.map((row) => ExecutionId.make(row.execution_id))
    })
  }
  return service
})
