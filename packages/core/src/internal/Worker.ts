/**
 * The worker: takes executions from the queue under a lease (the shared `ClaimLoop`), runs each
 * (`WorkerRun`), and keeps their leases (`LeaseKeeper`). A lost worker's execution is run again
 * once its lease expires, up to `maxAttempts` claims, then failed. Stopping the worker (closing
 * its scope) stops taking work, waits up to `drainTimeout` for running executions (`Drain`, cut
 * short by `Shutdown.unsafeHurry`), then interrupts their workflows and releases their leases so
 * that they run again at once elsewhere or on the next start, the stop not counted against
 * `maxAttempts` (an outcome already being written is written first).
 */
import type { ExecutionId } from "@appexec/api/Ids"
import { Clock, Effect, Fiber, FiberRef, FiberSet, Layer, LogLevel } from "effect"
import { AppexecConfig, millis } from "../AppexecConfig.js"
import { startedState } from "../ExecutionLifecycle.js"
import { type Claim, ExecutionQueue } from "../ExecutionQueue.js"
import { IdGenerator } from "../IdGenerator.js"
import { Shutdown } from "../Shutdown.js"
import { Cancellations } from "./Cancellations.js"
import * as ClaimLoop from "./ClaimLoop.js"
import * as Drain from "./Drain.js"
import * as LeaseKeeper from "./LeaseKeeper.js"
import * as WorkerRun from "./WorkerRun.js"

/**
 * Most executions one claim takes, and most held ahead of need. A claim's round trip and the save
 * of its outcomes cost about the same whatever their size, so while short work keeps coming a
 * larger batch spreads them over more executions: on PostgreSQL, 128 rather than 32 drains about
 * 40% more no-op executions a second with one worker process, and two processes more than one
 * (docs/performance.md). Only short items are held ahead (`ClaimLoop`), so a large batch does not
 * keep slow work from an idle worker elsewhere.
 */
const CLAIM_BATCH = 128

/**
 * The worker as a scoped effect: it runs until the scope closes. Its claim loop claims as many
 * executions as there are free slots (up to `CLAIM_BATCH`) under one write, and runs each in a
 * fiber of its own, started at once from the claim (no fiber waits to hand it over), or without
 * one when its nodes all answer at once (`WorkerRun`'s `runNow`): the outcomes of those are saved
 * together, one fiber a claim, which a stopping worker waits for.
 */
export const run = Effect.gen(function*() {
  const config = yield* AppexecConfig
  const queue = yield* ExecutionQueue
  const ids = yield* IdGenerator
  const cancellations = yield* Cancellations
  const shutdown = yield* Shutdown
  const workerId = yield* ids.uuid
  const keeper = yield* LeaseKeeper.make
  const { runs } = keeper
  const { announceAtOnce, process, runInClaim, runNow, saveOutcomes } = yield* WorkerRun.make(runs)
  /**
   * The outcomes of runs done at once (`runNow`) not yet saved: saved together by one
   * fiber, started after the claim that took them has started them all, so one claim's runs
   * share one fiber and (with group commit) one transaction.
   */
  let outcomes: Array<WorkerRun.Outcome> = []
  const saving = yield* FiberSet.make<void>()
  const forkSaving = yield* Effect.interruptible(FiberSet.runtime(saving)<never>())
  const saveGroup = Effect.uninterruptible(Effect.suspend(() => {
    const group = outcomes
    outcomes = []
    return saveOutcomes(group)
  }))
  /** An outcome to save with the others of its claim: the first of a group forks the fiber that saves them. */
  const saveLater = (outcome: WorkerRun.Outcome) => {
    outcomes.push(outcome)
    if (outcomes.length === 1) forkSaving(saveGroup, { immediate: false })
  }
  const keeping = yield* Effect.forkScoped(keeper.keep)
  const leaseMs = millis(config.lease)
  /** When the current claim was made: the start it writes on what it finds queued. */
  let claimedAt = 0

  /**
   * Runs made inside their claim's write (`runAtOnce`) and not done there, by execution id: their
   * claim's work takes them up, with the workflow begun there if it was. Emptied as each claim
   * starts (a claim's work is made before the next claim begins).
   */
  const madeInClaim = new Map<ExecutionId, WorkerRun.Run>()
  const newRun = (claim: Claim): WorkerRun.Run => ({
    executionId: claim.execution.executionId,
    lease: claim.lease,
    deadline: Number.POSITIVE_INFINITY,
    stop: undefined,
    fiber: undefined,
    started: undefined,
    timeoutMs: 0,
    outputTypes: {},
    claimedAt,
    claimStarted: claim.started,
    // Its slot's, once its work is made.
    freeSlot: () => {}
  })
  // Runs done at once are run inside the claim's write, their outcome written with it: not while
  // debug lines are logged (the fiber path logs each outcome), and never for a run with a span.
  const debug = LogLevel.lessThanEqual(yield* FiberRef.get(FiberRef.currentMinimumLogLevel), LogLevel.Debug)
  const runAtOnce = debug ? undefined : (claim: Claim) => {
    const run = newRun(claim)
    const ran = runInClaim(run, claim.execution)
    if (ran === undefined) madeInClaim.set(run.executionId, run)
    else madeInClaim.delete(run.executionId)
    return ran
  }

  const claim = (limit: number) =>
    Effect.flatMap(Clock.currentTimeMillis, (at) => {
      claimedAt = at
      madeInClaim.clear()
      return queue.claimBatch(workerId, leaseMs, {
        limit,
        maxRunningPerWorkspace: config.maxRunningPerWorkspace,
        // The claim writes the fields of the `Started` transition on what it finds queued.
        start: startedState(at),
        runAtOnce
      }).pipe(
        Effect.catchTag(
          "StorageError",
          (error) => Effect.logError("claim failed", error).pipe(Effect.as([] as ReadonlyArray<Claim>))
        )
      )
    })

  /** The run of one claimed execution, registered with the keeper and for cancels. */
  const work = (claim: Claim, freeSlot: () => void): ClaimLoop.Work => {
    const ran = claim.ranAtOnce
    // Run and stored by its claim: announced, and its slot given back at once.
    if (ran !== undefined) return { effect: Effect.void, now: () => (announceAtOnce(ran), true) }
    const executionId = claim.execution.executionId
    const run = madeInClaim.get(executionId) ?? newRun(claim)
    madeInClaim.delete(executionId)
    run.freeSlot = freeSlot
    keeper.add(run)
    const unregister = cancellations.unsafeRegister(executionId, () => runs.stop(run, "canceled"))
    let ended = false
    const endNow = () => {
      ended = true
      if (runs.map.get(executionId) === run) runs.map.delete(executionId)
      unregister()
      freeSlot()
    }
    return {
      // Made only for a run that needs its fiber: most are done at once.
      get effect() {
        return process(run, claim.execution, Effect.sync(endNow))
      },
      // A run that ended within the fork (storage that answers synchronously) is not kept.
      forked: (fiber) => {
        if (!ended) run.fiber = fiber
      },
      now: () => runNow(run, claim.execution, endNow, saveLater)
    }
  }

  // Idle until work may be claimable: an insert or release in this process, a finished run here
  // when workspaces are capped (one may be under its cap again), or the poll interval for work
  // written by other processes. Uncapped, a finished run frees a slot but makes nothing claimable.
  const idle = config.maxRunningPerWorkspace === undefined
    ? () => Effect.raceFirst(queue.awaitWork, Effect.sleep(config.pollInterval))
    : (slotFreed: Effect.Effect<void>) =>
      Effect.raceAll([queue.awaitWork, slotFreed, Effect.sleep(config.pollInterval)])

  const loop = yield* ClaimLoop.make<Claim>({
    slots: config.workerConcurrency,
    batch: CLAIM_BATCH,
    claim,
    work,
    // Every log of the run names its execution and attempt.
    annotations: (claim) => ({ executionId: claim.execution.executionId, attempt: claim.lease.attempt }),
    idle
  })

  // Cancels made by other processes reach this worker through the store: while it runs something
  // (a slot is taken), it asks every `cancelCheckInterval` which of its executions to cancel.
  const checkCancels = Effect.gen(function*() {
    yield* loop.busy
    yield* Effect.sleep(config.cancelCheckInterval)
    if (runs.map.size === 0) return
    const requested = yield* queue.cancelRequested(workerId)
    yield* Effect.forEach(requested, cancellations.signal, { discard: true })
  }).pipe(Effect.catchTag("StorageError", (error) => Effect.logWarning("cancel check failed", error)))
  const cancelChecks = yield* Effect.forkScoped(Effect.forever(checkCancels))

  yield* Effect.addFinalizer(() =>
    Effect.gen(function*() {
      // From now on a run that fails is handed back: the failure may be the stop's doing.
      yield* shutdown.begin
      yield* loop.stop
      yield* Fiber.interrupt(cancelChecks)
      const size = yield* loop.size
      if (size > 0 && millis(config.drainTimeout) > 0) {
        // The keeper still renews the leases of what runs meanwhile.
        yield* Drain.drain({
          awaitEmpty: loop.awaitEmpty,
          size: loop.size,
          runs: () => runs.map.values(),
          timeout: config.drainTimeout
        })
      }
      // What still runs is interrupted: a workflow stops and gives its lease back; a write under
      // way (a run's outcome) is finished first.
      yield* loop.interruptAll
      // Outcomes of runs done at once are written, never cut off.
      yield* FiberSet.awaitEmpty(saving)
      yield* Fiber.interrupt(keeping)
    })
  )
  yield* Effect.logDebug(`worker ${workerId} started`)
})

/** A worker that lives as long as the layer. */
export const layer = Layer.scopedDiscard(run)
