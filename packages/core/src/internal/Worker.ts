/**
 * The worker: takes executions from the queue under a lease, renews the lease while the workflow
 * runs, and records the outcome through the status state machine. A lost worker's execution is
 * run again once its lease expires, up to `maxAttempts` claims, then failed. Stopping the worker
 * (closing its scope) stops taking work, waits up to `drainTimeoutMs` for running executions,
 * then interrupts their workflows and releases their leases so another worker takes them at
 * once (an outcome already being written is written first).
 *
 * A run forks nothing beside its own fiber: one keeper per worker renews every lease the worker
 * holds in one storage call per `renewEvery`, and watches the runs' deadlines; it stops a run
 * whose lease is lost or whose time is up by interrupting its fiber, as a cancel does.
 */
import type { OutputType } from "@appexec/api/Execution"
import type { ExecutionId } from "@appexec/api/Ids"
import { Cause, Clock, Deferred, Duration, Effect, Either, Fiber, FiberId, Layer, Option, Queue } from "effect"
import type { CompiledApp } from "../AppDefinition.js"
import { AppexecConfig, millis } from "../AppexecConfig.js"
import { recordFinished } from "../AppexecMetrics.js"
import type { LeaseLost, StorageError } from "../Errors.js"
import { ExecutionEvents } from "../ExecutionEvents.js"
import { type ExecutionEvent, failNow, isTerminal, transition } from "../ExecutionLifecycle.js"
import { type Claim, ExecutionQueue, type Lease } from "../ExecutionQueue.js"
import type { ExecutionRecord } from "../ExecutionRecord.js"
import { ExecutionStore } from "../ExecutionStore.js"
import { IdGenerator } from "../IdGenerator.js"
import * as TraceContext from "../TraceContext.js"
import { DeliveryId, entryFor } from "../WebhookOutbox.js"
import { AppCatalog } from "./AppCatalog.js"
import { CANCELED_MESSAGE, Cancellations } from "./Cancellations.js"
import * as Forker from "./Forker.js"
import { runWorkflow } from "./WorkflowRunner.js"

const formatDuration = (ms: number) => Duration.format(Duration.millis(ms))

/** Why a run was told to stop before its workflow ended. */
type StopReason = "canceled" | "timed out" | "lease lost"

type OutputTypes = Readonly<Record<string, Exclude<OutputType, "pending">>>

/** One run of this worker, from its claim to its end. */
interface Run {
  readonly executionId: ExecutionId
  /** The lease as last renewed. */
  lease: Lease
  /** When the run times out (epoch ms); never until its workflow starts. */
  deadline: number
  /** Why the run was told to stop, once it was. */
  stop: StopReason | undefined
  /** The run's fiber: what a stop interrupts (it takes effect only while the workflow runs). */
  fiber: Fiber.RuntimeFiber<unknown, unknown> | undefined
  /** The execution as saved `running`, once it was. */
  started: ExecutionRecord | undefined
  timeoutMs: number
  outputTypes: OutputTypes
  /** When the claim that took it was made: the start it was given if it was queued. */
  readonly claimedAt: number
  /** Gives the run's slot back (once): a run awaiting its last write no longer holds one. */
  readonly freeSlot: () => void
}

/** The runs of a worker by execution id, and what the keeper needs to hear of them. */
interface Runs {
  readonly map: Map<ExecutionId, Run>
  /** Tells the keeper that a run has a deadline (it wakes if that is sooner than it planned). */
  readonly armed: (run: Run) => void
  /** Tells a run to stop: interrupts its workflow, or keeps it from starting. Once per run. */
  readonly stop: (run: Run, reason: StopReason) => void
}

/** The compiled app's output types, made once per compiled app rather than per run. */
const outputTypesOf = (() => {
  const cache = new WeakMap<CompiledApp, OutputTypes>()
  return (app: CompiledApp): OutputTypes => {
    let types = cache.get(app)
    if (types === undefined) {
      types = Object.fromEntries(app.outputs.map((o) => [o.id, o.type]))
      cache.set(app, types)
    }
    return types
  }
})()

/** Restores interruptibility inside the run's otherwise uninterruptible fiber. */
type Restore = <A, E, R>(effect: Effect.Effect<A, E, R>) => Effect.Effect<A, E, R>

/**
 * Runs one claimed execution to its end, or gives it up when it is stopped. The run's fiber is
 * uninterruptible but while its workflow runs: a stop (cancel, timeout, lost lease, the worker
 * stopping) interrupts the workflow; one that comes after it has ended finds nothing to
 * interrupt, and the outcome is recorded (and a write under way is never cut off).
 */
const makeProcess = (runs: Runs) =>
  Effect.gen(function*() {
    const config = yield* AppexecConfig
    const queue = yield* ExecutionQueue
    const store = yield* ExecutionStore
    const catalog = yield* AppCatalog
    const events = yield* ExecutionEvents
    const ids = yield* IdGenerator
    const now = Effect.clockWith((clock) => clock.currentTimeMillis)
    // A span per run only when spans go somewhere: the default tracer keeps them to itself.
    const traced = yield* TraceContext.spansExported

    const apply = (record: ExecutionRecord, event: ExecutionEvent) =>
      Either.match(transition(record, event), { onLeft: Effect.die, onRight: Effect.succeed })

    /** Announces a stored record, and counts it when it is terminal. */
    const announce = (record: ExecutionRecord, terminal: boolean) => {
      const published = Effect.zipRight(
        events.publish(record),
        Effect.logDebug(`execution ${record.executionId} ${record.status}`)
      )
      return Effect.as(terminal ? Effect.zipRight(recordFinished(record), published) : published, record)
    }

    const save = (record: ExecutionRecord, lease: Lease): Effect.Effect<ExecutionRecord, LeaseLost | StorageError> => {
      const terminal = isTerminal(record.status)
      const stored = terminal && record.webhookUrl !== null
        ? Effect.gen(function*() {
          const outbox = entryFor(record, DeliveryId.make(yield* ids.uuid), yield* now, yield* TraceContext.current)
          yield* store.save(record, lease, outbox)
        })
        : store.save(record, lease)
      return Effect.zipRight(stored, announce(record, terminal))
    }

    const fail = (record: ExecutionRecord, lease: Lease, errorMessage: string) =>
      Effect.flatMap(now, (at) =>
        Either.match(failNow(record, at, errorMessage, {}), {
          onLeft: Effect.die,
          onRight: (failed) => save(failed, lease)
        }))

    const leaseLost = (run: Run) =>
      Effect.logWarning(`execution ${run.executionId}: lease lost; another worker owns it now`)

    /** The end of a run that was told to stop: recorded as failed, or left alone when its lease is lost. */
    const stopped = (run: Run, started: ExecutionRecord) =>
      Effect.suspend(() => {
        if (run.stop === "lease lost") return leaseLost(run)
        const errorMessage = run.stop === "canceled"
          ? CANCELED_MESSAGE
          : `The execution timed out after ${formatDuration(run.timeoutMs)}.`
        return Effect.flatMap(now, (at) =>
          Effect.flatMap(
            apply(started, {
              _tag: "Failed",
              at,
              errorMessage,
              produced: [],
              outputErrors: {},
              outputTypes: run.outputTypes
            }),
            (failed) => save(failed, run.lease)
          ))
      })

    /** The workflow of a started run, then its outcome. */
    const workflow = (run: Run, app: CompiledApp, started: ExecutionRecord, restore: Restore) => {
      run.started = started
      // Told to stop (a cancel, a lost lease) before the workflow started: it does not start.
      if (run.stop !== undefined) return stopped(run, started)
      return Effect.flatMap(now, (at) => {
        run.deadline = at + run.timeoutMs
        runs.armed(run)
        // The one interruptible part of the run: a stop interrupts it, and the interruption is
        // recorded by the handler in `process` below.
        const running = restore(runWorkflow(
          app,
          started.inputs,
          { executionId: started.executionId, appId: started.appId, workspaceId: started.workspaceId },
          config.nodeConcurrency
        ))
        return Effect.flatMap(running, (result) =>
          // The workflow ended: its outcome is recorded, whatever stop comes now.
          Effect.flatMap(now, (at) => {
            const event: ExecutionEvent = Option.isNone(result.firstError)
              ? { _tag: "Completed", at, produced: result.produced }
              : {
                _tag: "Failed",
                at,
                errorMessage: result.firstError.value,
                produced: result.produced,
                outputErrors: result.outputErrors,
                outputTypes: run.outputTypes
              }
            return Effect.flatMap(apply(started, event), (ended) => {
              // The slot is free while the outcome is written: the next claim shares its commit.
              run.freeSlot()
              return save(ended, run.lease)
            })
          }))
      })
    }

    const body = (run: Run, execution: ExecutionRecord, restore: Restore) => {
      const lease = run.lease
      if (lease.attempt > config.maxAttempts) {
        return fail(
          execution,
          lease,
          `The execution was abandoned: its worker stopped ${
            lease.attempt - 1
          } times before finishing (at most ${config.maxAttempts} attempts).`
        )
      }
      return Effect.flatMap(Effect.either(catalog.load(execution.workflowId)), (loaded) => {
        if (Either.isLeft(loaded)) {
          return Effect.zipRight(
            Effect.logError(`execution ${execution.executionId}: workflow cannot be loaded`, loaded.left),
            fail(execution, lease, "The app's workflow could not be loaded.")
          )
        }
        const { app } = loaded.right
        run.timeoutMs = (app.definition.timeoutSeconds ?? 0) * 1000 || millis(config.defaultTimeout)
        run.outputTypes = outputTypesOf(app)
        // The claim started it (`ClaimOptions.startAt`) when the store could; else it starts here.
        if (execution.status === "queued") {
          return Effect.flatMap(
            Effect.flatMap(
              now,
              (at) => Effect.flatMap(apply(execution, { _tag: "Started", at }), (s) => save(s, lease))
            ),
            (started) => workflow(run, app, started, restore)
          )
        }
        const started = execution.startedAt === run.claimedAt
          ? Effect.zipRight(events.publish(execution), workflow(run, app, execution, restore))
          : workflow(run, app, execution, restore)
        return started
      })
    }

    /** A defect is a bug: log it for the operator and fail the execution, rather than leave it
     * running until its lease expires and run it again into the same bug. */
    const defect = (run: Run, cause: Cause.Cause<unknown>) =>
      Effect.gen(function*() {
        yield* Effect.logError(`execution ${run.executionId}: unexpected error in the worker`, cause)
        const current = yield* store.get(run.executionId)
        if (Option.isSome(current) && !isTerminal(current.value.status)) {
          yield* fail(current.value, run.lease, "The execution failed unexpectedly.")
        }
      }).pipe(
        Effect.catchAllCause((cause) =>
          Effect.logError(`execution ${run.executionId}: could not record the failure; its lease will expire`, cause)
        )
      )

    const logged = (run: Run, effect: Effect.Effect<unknown, LeaseLost | StorageError>) =>
      effect.pipe(
        Effect.catchTag("LeaseLost", () => leaseLost(run)),
        Effect.catchTag("StorageError", (error) =>
          Effect.logError(
            `execution ${run.executionId}: storage failed; the lease will expire and it runs again`,
            error
          ))
      )

    /** How a run that did not end well ends: each kind of failure in one handler. */
    const failed = (run: Run, cause: Cause.Cause<LeaseLost | StorageError>): Effect.Effect<unknown> => {
      if (Cause.isInterruptedOnly(cause)) {
        // Interrupted by a stop: record it. Interrupted by the worker stopping: give the lease back.
        return run.stop !== undefined && run.started !== undefined
          ? logged(run, stopped(run, run.started)).pipe(Effect.catchAllCause((cause) => defect(run, cause)))
          : queue.release(run.lease).pipe(Effect.ignoreLogged)
      }
      const failure = Cause.failureOption(cause)
      if (Option.isNone(failure)) return defect(run, cause)
      return logged(run, Effect.fail(failure.value)).pipe(Effect.catchAllCause((cause) => defect(run, cause)))
    }

    /** A takeover is said out loud: the run's previous worker was lost with its lease. */
    const reclaimed = (run: Run) =>
      Effect.logWarning(`execution ${run.executionId} reclaimed after lost lease (attempt ${run.lease.attempt})`)

    return (run: Run, execution: ExecutionRecord, end: Effect.Effect<void>): Effect.Effect<void> => {
      const process = Effect.uninterruptibleMask((restore) =>
        Effect.matchCauseEffect(
          Effect.suspend(() =>
            run.lease.attempt > 1
              ? Effect.zipRight(reclaimed(run), body(run, execution, restore))
              : body(run, execution, restore)
          ),
          {
            onFailure: (cause) => Effect.zipRight(failed(run, cause), end),
            onSuccess: () => end
          }
        )
      )
      return traced
        // The span of the run, without the cost of capturing a stack trace per execution.
        ? process.pipe(
          Effect.withSpan("Worker.process", { captureStackTrace: false }),
          TraceContext.continueFrom(execution.traceParent)
        )
        : process
    }
  })

/** Most executions one claim takes. */
const CLAIM_BATCH = 32

/**
 * The keeper of a worker's runs: renews every lease the worker holds in one call each
 * `renewEvery`, and stops runs whose lease is lost or whose deadline has passed. It sleeps while
 * the worker runs nothing.
 */
const makeKeeper = Effect.gen(function*() {
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

/**
 * The worker loop as a scoped effect: it runs until the scope closes. One loop claims as many
 * executions as there are free slots (up to `CLAIM_BATCH`) under one write, and runs each in a
 * fiber of its own, started at once from the claim (no fiber waits to hand it over).
 */
export const run = Effect.gen(function*() {
  const config = yield* AppexecConfig
  const queue = yield* ExecutionQueue
  const ids = yield* IdGenerator
  const cancellations = yield* Cancellations
  const workerId = yield* ids.uuid
  const keeper = yield* makeKeeper
  const { runs } = keeper
  const process = yield* makeProcess(runs)
  // The runs are forked from plain code, with the services and settings of the worker: the
  // runtime is taken once, not per run.
  const fork = Forker.make(yield* Effect.runtime<never>())
  // The runs of this worker: interrupting one's fiber stops its run.
  const running = new Set<Run>()
  let free = config.workerConcurrency
  const slotFreed = yield* Queue.sliding<void>(1)
  /** Open while this worker runs at least one execution (a slot is taken). */
  const busy = yield* Effect.makeLatch(false)
  const claimOptions = (limit: number, startAt: number) => ({
    limit,
    maxRunningPerWorkspace: config.maxRunningPerWorkspace,
    startAt
  })

  /** Starts the fiber of one claimed execution. */
  const start = (claim: Claim, claimedAt: number) => {
    const executionId = claim.execution.executionId
    let slotHeld = true
    const freeSlot = () => {
      if (!slotHeld) return
      slotHeld = false
      free += 1
      if (free === config.workerConcurrency) busy.unsafeClose()
      Queue.unsafeOffer(slotFreed, undefined)
    }
    const run: Run = {
      executionId,
      lease: claim.lease,
      deadline: Number.POSITIVE_INFINITY,
      stop: undefined,
      fiber: undefined,
      started: undefined,
      timeoutMs: 0,
      outputTypes: {},
      claimedAt,
      freeSlot
    }
    keeper.add(run)
    const unregister = cancellations.unsafeRegister(executionId, () => runs.stop(run, "canceled"))
    free -= 1
    busy.unsafeOpen()
    const end = Effect.sync(() => {
      if (runs.map.get(executionId) === run) runs.map.delete(executionId)
      running.delete(run)
      unregister()
      freeSlot()
    })
    running.add(run)
    // Every log of the run names its execution and attempt.
    const fiber = fork(process(run, claim.execution, end), { executionId, attempt: claim.lease.attempt })
    // A run that ended within the fork (storage that answers synchronously) is not kept.
    if (running.has(run)) run.fiber = fiber
  }

  // Idle until work may be claimable: an insert or release in this process, a finished run here
  // when workspaces are capped (one may be under its cap again), or the poll interval for work
  // written by other processes. Uncapped, a finished run frees a slot but makes nothing claimable.
  const idle = config.maxRunningPerWorkspace === undefined
    ? Effect.raceFirst(queue.awaitWork, Effect.sleep(config.pollInterval))
    : Effect.raceAll([queue.awaitWork, Queue.take(slotFreed), Effect.sleep(config.pollInterval)])
  const step = Effect.gen(function*() {
    while (free === 0) yield* Queue.take(slotFreed)
    const wanted = Math.min(free, CLAIM_BATCH)
    const at = yield* Clock.currentTimeMillis
    // Claiming and handing each claim to its fiber cannot be split by an interruption, or a
    // claim would sit unworked until its lease expired.
    const claimed = yield* Effect.uninterruptible(
      queue.claimBatch(workerId, millis(config.lease), claimOptions(wanted, at)).pipe(
        Effect.catchTag(
          "StorageError",
          (error) => Effect.logError("claim failed", error).pipe(Effect.as([] as ReadonlyArray<Claim>))
        ),
        Effect.tap((claims) =>
          Effect.sync(() => {
            for (const claim of claims) start(claim, at)
          })
        )
      )
    )
    if (claimed.length < wanted) yield* idle
  })
  const loop = yield* Effect.forkScoped(Effect.whileLoop({ while: () => true, body: () => step, step: () => {} }))
  const keeping = yield* Effect.forkScoped(keeper.keep)

  // Cancels made by other processes reach this worker through the store: while it runs something
  // (`busy` is open), it asks every `cancelCheckInterval` which of its executions to cancel.
  const checkCancels = Effect.gen(function*() {
    yield* busy.await
    yield* Effect.sleep(config.cancelCheckInterval)
    if (runs.map.size === 0) return
    const requested = yield* queue.cancelRequested(workerId)
    yield* Effect.forEach(requested, cancellations.signal, { discard: true })
  }).pipe(Effect.catchTag("StorageError", (error) => Effect.logWarning("cancel check failed", error)))
  const cancelChecks = yield* Effect.forkScoped(Effect.forever(checkCancels))

  /** The fibers of the runs under way (the loop is stopped first, so no run starts meanwhile). */
  const fibers = () => [...running].flatMap((run) => (run.fiber === undefined ? [] : [run.fiber]))
  yield* Effect.addFinalizer(() =>
    Effect.gen(function*() {
      yield* Fiber.interrupt(loop)
      yield* Fiber.interrupt(cancelChecks)
      const size = running.size
      if (size > 0 && millis(config.drainTimeout) > 0) {
        yield* Effect.logInfo(`worker stopping: waiting for ${size} running execution(s)`)
        // Finalizers run uninterruptibly: only an interruptible wait can be cut short by the timeout.
        // The keeper still renews the leases of what runs meanwhile.
        yield* Effect.interruptible(Fiber.awaitAll(fibers())).pipe(Effect.timeoutOption(config.drainTimeout))
      }
      // What still runs is interrupted: a workflow stops and gives its lease back; a write under
      // way (a run's outcome) is finished first.
      yield* Fiber.interruptAll(fibers())
      yield* Fiber.interrupt(keeping)
    })
  )
  yield* Effect.logDebug(`worker ${workerId} started`)
})

/** A worker that lives as long as the layer. */
export const layer = Layer.scopedDiscard(run)
