/**
 * `ExecutionQueue` on SQL, the part every dialect shares: the cancel requests for a worker's
 * live leases. Claims, renewals and releases are the adapter's own statements (the claim's
 * locking, its round robin and its wake-ups differ by dialect).
 */
import { ExecutionId } from "@appexec/api/Ids"
import type { ExecutionQueue } from "@appexec/core"
import { Clock, Effect } from "effect"
import * as PreparedQuery from "./PreparedQuery.js"
import { OPEN } from "./SqlExecutionStore.js"
import { SqlRunner } from "./SqlRunner.js"

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
