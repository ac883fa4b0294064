/**
 * The lease keeper of a worker: one fiber that renews every lease the worker holds in one storage
 * call per `renewEvery`, and watches the runs' deadlines. It asks the worker's runs (`Runs`) what
 * they hold, and tells them what it found: a lease lost or a deadline passed stops the run, as a
 * cancel does. It sleeps while the worker runs nothing.
 */
import { Cause, Deferred, Duration, Effect, Either, FiberId } from "effect"
import { AppexecConfig, millis } from "../../AppexecConfig.js"
import { ExecutionQueue } from "../../ExecutionQueue.js"
import type { Runs, Watcher } from "./Runs.js"

/** A lease keeper: `watcher` is what the runs tell it (see `Runs.make`), `keep` its fiber's work. */
export interface LeaseKeeper {
  /** Wakes the keeper when a run comes while it renews nothing, or a deadline is sooner than it planned. */
  readonly watcher: Watcher
  /** Keeps the leases and deadlines of `runs`, for ever. */
  readonly keep: (runs: Runs) => Effect.Effect<never>
}

/**
 * The keeper of a worker's runs: renews every lease the worker holds in one call each
 * `renewEvery`, and stops runs whose lease is lost or whose deadline has passed.
 */
export const make = Effect.gen(function*() {
  const config = yield* AppexecConfig
  const queue = yield* ExecutionQueue
  const now = Effect.clockWith((clock) => clock.currentTimeMillis)
  const renewEvery = millis(config.renewEvery)
  const leaseMs = millis(config.lease)
  /** When the keeper wakes next on its own; never while it has nothing to watch. */
  let wakeAt = Number.POSITIVE_INFINITY
  let wake = Deferred.unsafeMake<void>(FiberId.none)
  const watch = (at: number) => {
    if (at < wakeAt) {
      wakeAt = at
      Deferred.unsafeDone(wake, Effect.void)
    }
  }
  let nextRenewal = Number.POSITIVE_INFINITY
  const watcher: Watcher = {
    // A run added while renewals are planned changes nothing: it is renewed with the others.
    added: () => {
      if (nextRenewal === Number.POSITIVE_INFINITY) watch(Number.NEGATIVE_INFINITY)
    },
    armed: watch
  }

  const renewAll = (runs: Runs, at: number) =>
    Effect.gen(function*() {
      const held = runs.leases()
      const renewal = yield* queue.renewAll(held, leaseMs).pipe(Effect.either)
      if (Either.isRight(renewal)) return runs.renewed(held, renewal.right)
      // A run whose lease would run out before the next try stops now, rather than run beside a
      // second copy that another worker may claim meanwhile; the others try again next time.
      const ending = runs.stopExpiring(held, at + renewEvery)
      if (ending.length > 0) {
        yield* Effect.logWarning(
          "lease renewal failed and the lease runs out before the next try; stopping the run",
          renewal.left
        ).pipe(Effect.annotateLogs({ executions: ending.join(",") }))
      }
      if (ending.length < held.length) yield* Effect.logWarning("lease renewal failed; retrying", renewal.left)
    })

  const step = (runs: Runs) =>
    Effect.gen(function*() {
      // A wake-up from here on completes the wait below at once: nothing added or armed while this
      // step computes is missed.
      const signal = wake = Deferred.unsafeMake<void>(FiberId.none)
      wakeAt = Number.POSITIVE_INFINITY
      const at = yield* now
      if (runs.size() === 0) nextRenewal = Number.POSITIVE_INFINITY
      else if (nextRenewal === Number.POSITIVE_INFINITY) nextRenewal = at + renewEvery
      else if (at >= nextRenewal) {
        // Moved first: a renewal that fails (or dies) is tried again a period later, not at once.
        nextRenewal = at + renewEvery
        yield* renewAll(runs, at)
      }
      const earliest = runs.stopDue(at, nextRenewal)
      wakeAt = earliest
      yield* earliest === Number.POSITIVE_INFINITY
        ? Deferred.await(signal)
        : Effect.raceFirst(Deferred.await(signal), Effect.sleep(Duration.millis(earliest - at)))
    })

  // A bug in one step is logged; the keeper goes on, or the leases of every run would lapse.
  const keep = (runs: Runs) =>
    Effect.forever(
      step(runs).pipe(
        Effect.catchAllDefect((defect) => Effect.logError("the lease keeper failed a step", Cause.die(defect)))
      )
    )
  return { watcher, keep } satisfies LeaseKeeper
})
