/**
 * The lease keeper of a worker: one fiber that renews every lease the worker holds in one storage
 * call per `renewEvery`, and watches the runs' deadlines; it stops a run whose lease is lost or
 * whose time is up by interrupting its fiber, as a cancel does. It sleeps while the worker runs
 * nothing.
 */
import type { ExecutionId } from "@appexec/api/Ids"
import { Cause, Deferred, Duration, Effect, Either, FiberId } from "effect"
import { AppexecConfig, millis } from "../AppexecConfig.js"
import { ExecutionQueue } from "../ExecutionQueue.js"
import type { Run, Runs, StopReason } from "./WorkerRun.js"

/**
 * The keeper of a worker's runs: renews every lease the worker holds in one call each
 * `renewEvery`, and stops runs whose lease is lost or whose deadline has passed. It sleeps while
 * the worker runs nothing.
 */
export const make = Effect.gen(function*() {
  const config = yield* AppexecConfig
  const queue = yield* ExecutionQueue
  const now = Effect.clockWith((clock) => clock.currentTimeMillis)
  const renewEvery = millis(config.renewEvery)
  const leaseMs = millis(config.lease)
  const map = new Map<ExecutionId, Run>()
  /** When the keeper wakes next on its own; never while it has nothing to watch. */
  let wakeAt = Number.POSITIVE_INFINITY
  let wake = Deferred.unsafeMake<void>(FiberId.none)
  const nudge = (at: number) => {
    if (at < wakeAt) {
      wakeAt = at
      Deferred.unsafeDone(wake, Effect.void)
    }
  }
  const stop = (run: Run, reason: StopReason) => {
    if (run.stop !== undefined) return
    run.stop = reason
    run.fiber?.unsafeInterruptAsFork(FiberId.none)
  }
  const runs: Runs = { map, armed: (run) => nudge(run.deadline), stop }
  let nextRenewal = Number.POSITIVE_INFINITY

  const renewAll = (at: number) =>
    Effect.gen(function*() {
      const held = [...map.values()]
      const renewal = yield* queue.renewAll(held.map((run) => run.lease), leaseMs).pipe(Effect.either)
      if (Either.isRight(renewal)) {
        const renewed = new Map(renewal.right.map((lease) => [lease.executionId, lease]))
        for (const run of held) {
          const lease = renewed.get(run.executionId)
          if (lease !== undefined) run.lease = lease
          else if (map.get(run.executionId) === run) stop(run, "lease lost")
        }
        return
      }
      // A run whose lease would run out before the next try stops now, rather than run beside a
      // second copy that another worker may claim meanwhile; the others try again next time.
      const ending = held.filter((run) => at + renewEvery >= run.lease.expiresAt && map.get(run.executionId) === run)
      if (ending.length > 0) {
        yield* Effect.logWarning(
          "lease renewal failed and the lease runs out before the next try; stopping the run",
          renewal.left
        ).pipe(Effect.annotateLogs({ executions: ending.map((run) => run.executionId).join(",") }))
        for (const run of ending) stop(run, "lease lost")
      }
      if (ending.length < held.length) yield* Effect.logWarning("lease renewal failed; retrying", renewal.left)
    })

  const step = Effect.gen(function*() {
    // A nudge from here on completes the wait below at once: nothing added or armed while this
    // step computes is missed.
    const signal = wake = Deferred.unsafeMake<void>(FiberId.none)
    wakeAt = Number.POSITIVE_INFINITY
    const at = yield* now
    if (map.size === 0) nextRenewal = Number.POSITIVE_INFINITY
    else if (nextRenewal === Number.POSITIVE_INFINITY) nextRenewal = at + renewEvery
    else if (at >= nextRenewal) {
      // Moved first: a renewal that fails (or dies) is tried again a period later, not at once.
      nextRenewal = at + renewEvery
      yield* renewAll(at)
    }
    let earliest = nextRenewal
    for (const run of map.values()) {
      if (run.stop !== undefined) continue
      if (run.deadline <= at) stop(run, "timed out")
      else if (run.deadline < earliest) earliest = run.deadline
    }
    wakeAt = earliest
    yield* earliest === Number.POSITIVE_INFINITY
      ? Deferred.await(signal)
      : Effect.raceFirst(Deferred.await(signal), Effect.sleep(Duration.millis(earliest - at)))
  })
  // A bug in one step is logged; the keeper goes on, or the leases of every run would lapse.
  const keep = Effect.forever(
    step.pipe(Effect.catchAllDefect((defect) => Effect.logError("the lease keeper failed a step", Cause.die(defect))))
  )

  /** Adds a run: the keeper starts renewing when this is the first. */
  const add = (run: Run) => {
    map.set(run.executionId, run)
    if (nextRenewal === Number.POSITIVE_INFINITY) nudge(Number.NEGATIVE_INFINITY)
  }
  return { runs, keep, add } as const
})
