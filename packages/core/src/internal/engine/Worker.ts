/**
 * The worker: takes executions from the queue under a lease (the shared `ClaimLoop`), runs each
 * (`WorkerRun`), and keeps their leases (`LeaseKeeper`). A lost worker's execution is run again
 * once its lease expires, up to `maxAttempts` claims, then failed. Stopping the worker (closing
 * its scope) stops taking work, waits up to `drainTimeout` for running executions (`Drain`, cut
 * short by `Shutdown.unsafeHurry`), then interrupts their workflows and releases their leases so
 * that they run again at once elsewhere or on the next start, the stop not counted against
 * `maxAttempts` (an outcome already being written is written first).
 */
import { Effect, Fiber, Layer, Option } from "effect"
import { AppexecConfig, millis } from "../../AppexecConfig.js"
import { type Claim, ExecutionQueue, isCapped } from "../../ExecutionQueue.js"
import { IdGenerator } from "../../IdGenerator.js"
import { ProcessIdentity } from "../../ProcessIdentity.js"
import { Shutdown } from "../../Shutdown.js"
import { Cancellations } from "./Cancellations.js"
import * as ClaimLoop from "./ClaimLoop.js"
import * as ClaimPlan from "./ClaimPlan.js"
import * as Drain from "./Drain.js"
import * as LeaseKeeper from "./LeaseKeeper.js"
import * as Runs from "./Runs.js"
import * as WorkerRun from "./WorkerRun.js"

/**
 * Most executions one claim takes, and most held ahead of need. A claim's round trip and the save
 * of its outcomes cost about the same whatever their size, so while short work keeps coming a
 * larger batch spreads them over more executions: on PostgreSQL, 1,024 rather than 128 drains
 * about a third more no-op executions a second, with one worker process and with two
 * (docs/performance.md). Only short items are held ahead (`ClaimLoop`), so a large batch does not
 * keep slow work from an idle worker elsewhere.
 */
const CLAIM_BATCH = 1024

/**
 * The same under caps: a claim under caps takes its executions one by one while it holds the
 * deployment's claim lock (PostgreSQL's `claimCapped`), so a smaller batch keeps that lock short.
 */
const CAPPED_CLAIM_BATCH = 128

/**
 * The worker as a scoped effect: it runs until the scope closes. Its claim loop claims as many
 * executions as there are free slots (up to `CLAIM_BATCH`, `CAPPED_CLAIM_BATCH` under caps) under
 * one write, and runs each in a fiber of its own (`WorkerRun`), started at once from the claim;
 * the runs are kept by one registry (`Runs`), which the lease keeper, the cancels and the drain ask.
 */
export const run = Effect.gen(function*() {
  const config = yield* AppexecConfig
  const queue = yield* ExecutionQueue
  const cancellations = yield* Cancellations
  const shutdown = yield* Shutdown
  // The leases name the process (`host:pid#suffix`), so the operator views say who runs what; a
  // worker run alone (tests) names itself with a fresh id.
  const identity = yield* Effect.serviceOption(ProcessIdentity)
  const workerId = Option.isSome(identity) ? identity.value.processId : yield* (yield* IdGenerator).uuid
  const keeper = yield* LeaseKeeper.make
  const runs = Runs.make({ cancellations, watcher: keeper.watcher })
  const { awaitSaves, process } = yield* WorkerRun.make(runs)
  const keeping = yield* Effect.forkScoped(keeper.keep(runs))
  const leaseMs = millis(config.lease)

  const plan = yield* ClaimPlan.make
  /** Whether the last claim ran under caps: then a run that ends may make work claimable. */
  let capped = config.maxRunningPerWorkspace !== undefined

  // The claim writes the lease alone: a run writes its start (`WorkerRun`), with its end when both
  // come in one turn. It takes only what the plan lets it: the versions this worker runs, under the caps.
  const claim = (limit: number) =>
    Effect.flatMap(plan.current, (options) => {
      capped = isCapped(options)
      return queue.claimBatch(workerId, leaseMs, { ...options, limit })
    }).pipe(
      Effect.catchTag(
        "StorageError",
        (error) => Effect.logError("claim failed", error).pipe(Effect.as([] as ReadonlyArray<Claim>))
      )
    )

  /** The run of one claimed execution, in the registry from its claim on (its lease kept, its cancel heard). */
  const work = (claim: Claim, freeSlot: () => void): ClaimLoop.Work => {
    const run = runs.add(claim, freeSlot)
    return { effect: process(run), forked: (fiber) => runs.attach(run, fiber) }
  }

  // Idle until work may be claimable: an insert or release in this process, a finished run here
  // under caps (a workspace or an app may be under its cap again), or the poll interval for work
  // written by other processes. Uncapped, a finished run frees a slot but makes nothing claimable.
  const uncappedIdle = Effect.raceFirst(queue.awaitWork, Effect.sleep(config.pollInterval))
  const idle = (slotFreed: Effect.Effect<void>) =>
    capped ? Effect.raceAll([queue.awaitWork, slotFreed, Effect.sleep(config.pollInterval)]) : uncappedIdle

  const loop = yield* ClaimLoop.make<Claim>({
    slots: config.workerConcurrency,
    batch: () => capped ? CAPPED_CLAIM_BATCH : CLAIM_BATCH,
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
    if (runs.size() === 0) return
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
          runs: runs.values,
          timeout: config.drainTimeout
        })
      }
      // What still runs is interrupted: a workflow stops and gives its lease back; a write under
      // way (a run's outcome) is finished first.
      yield* loop.interruptAll
      // The outcomes handed over are written, never cut off: the keeper renews their leases meanwhile.
      yield* awaitSaves
      yield* Fiber.interrupt(keeping)
    })
  )
  yield* Effect.logDebug(`worker ${workerId} started`)
})

/** A worker that lives as long as the layer. */
export const layer = Layer.scopedDiscard(run)
