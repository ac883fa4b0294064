/**
 * One run of the worker: a claimed execution taken to its end. The run's fiber is uninterruptible
 * but while its workflow runs; a stop (cancel, timeout, lost lease, the worker stopping)
 * interrupts the workflow, and the outcome is recorded through the status state machine
 * (`ExecutionLifecycle.transition`), with its webhook delivery when it has one. A run is never
 * failed because its process stops: interrupted by the worker stopping, or failing while the
 * instance stops (`Shutdown`), it is handed back (`ExecutionQueue.release`). A claim that
 * started the execution (`Claim.started`) has its `Started` transition applied here. A run whose
 * nodes all answer at once is done without a fiber (`runNow`), its outcome saved with the others
 * of its claim (`saveOutcomes`).
 */
import type { OutputType } from "@appexec/api/Execution"
import type { ExecutionId } from "@appexec/api/Ids"
import { Cause, Duration, Effect, Either, Exit, type Fiber, FiberRef, LogLevel, Option } from "effect"
import type { CompiledApp } from "../AppDefinition.js"
import { AppexecConfig, millis } from "../AppexecConfig.js"
import { recordFinished, unsafeRecordFinished } from "../AppexecMetrics.js"
import type { LeaseLost, StorageError } from "../Errors.js"
import { ExecutionEvents } from "../ExecutionEvents.js"
import { type ExecutionEvent, failNow, isTerminal, transition } from "../ExecutionLifecycle.js"
import { ExecutionQueue, type Lease, type RanAtOnce } from "../ExecutionQueue.js"
import { type ExecutionRecord, versionOf } from "../ExecutionRecord.js"
import { ExecutionReports } from "../ExecutionReports.js"
import * as ExecutionStore from "../ExecutionStore.js"
import { IdGenerator } from "../IdGenerator.js"
import { Redactor } from "../Redactor.js"
import { Shutdown } from "../Shutdown.js"
import * as TraceContext from "../TraceContext.js"
import { DeliveryId, entryFor } from "../WebhookOutbox.js"
import { AppCatalog } from "./AppCatalog.js"
import { CANCELED_MESSAGE } from "./Cancellations.js"
import * as Reporter from "./Reporter.js"
import {
  doneOf,
  type RunHooks,
  runWorkflow,
  type SettledOutput,
  startWorkflow,
  type WorkflowResult
} from "./WorkflowRunner.js"

const formatDuration = (ms: number) => Duration.format(Duration.millis(ms))

/** Why a run was told to stop before its workflow ended. */
export type StopReason = "canceled" | "timed out" | "lease lost"

/** The declared type of each output of an app. */
export type OutputTypes = Readonly<Record<string, Exclude<OutputType, "pending">>>

/** One run of a worker, from its claim to its end. */
export interface Run {
  readonly executionId: ExecutionId
  /** The lease as last renewed. */
  lease: Lease
  /** When the run times out (epoch ms); never until its workflow starts. */
  deadline: number
  /** Why the run was told to stop, once it was. */
  stop: StopReason | undefined
  /** The run's fiber: what a stop interrupts (it takes effect only while the workflow runs). */
  fiber: Fiber.RuntimeFiber<unknown, unknown> | undefined
  /** The execution as last saved `running` (with the outputs settled so far), once it was. */
  started: ExecutionRecord | undefined
  /** The workflow begun at the claim (`runNow`) but not done there: what the run's fiber takes up. */
  running?: Effect.Effect<WorkflowResult> | undefined
  /** What the run's nodes report, once one has. */
  reporter?: Reporter.Reporter | undefined
  timeoutMs: number
  outputTypes: OutputTypes
  /** When the claim that took it was made: the start it wrote, if it started the execution. */
  readonly claimedAt: number
  /** Whether the claim started the execution (`Claim.started`): core applies the transition. */
  readonly claimStarted: boolean
  /**
   * Gives the run's slot back (once): a run awaiting its last write no longer holds one. Set when
   * the claim's work is made (a run begun inside its claim is made before).
   */
  freeSlot: () => void
}

/** The outcome of a run done at once (`runNow`), to be saved with others. */
export interface Outcome {
  readonly run: Run
  readonly record: ExecutionRecord
  /** Gives the run up, once its outcome is saved or could not be. */
  readonly end: () => void
}

/** The runs of a worker by execution id, and what the keeper needs to hear of them. */
export interface Runs {
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
export const make = (runs: Runs) =>
  Effect.gen(function*() {
    const config = yield* AppexecConfig
    const queue = yield* ExecutionQueue
    const store = yield* ExecutionStore.ExecutionStore
    const catalog = yield* AppCatalog
    const events = yield* ExecutionEvents
    const ids = yield* IdGenerator
    const now = Effect.clockWith((clock) => clock.currentTimeMillis)
    // A span per run only when spans go somewhere: the default tracer keeps them to itself.
    const traced = yield* TraceContext.spansExported
    const reports = yield* ExecutionReports
    const newReporter = yield* Reporter.factory
    // What leaves a run (outputs, failure messages) is masked as the runner makes it.
    const redactor = yield* Redactor
    const shutdown = yield* Shutdown
    // Runs done at once save their outcomes together, when the store can (`ExecutionStore.saveAll`).
    const saveAll = ExecutionStore.saveAllOf(store)

    /**
     * `event` applied to `record`, then `then` given the new record straight away (no step of its
     * own: the run path pays for each). A transition refused is a bug, and dies.
     */
    const applyThen = <A, E>(
      record: ExecutionRecord,
      event: ExecutionEvent,
      then: (record: ExecutionRecord) => Effect.Effect<A, E>
    ): Effect.Effect<A, E> => {
      const applied = transition(record, event)
      return Either.isLeft(applied) ? Effect.die(applied.left) : then(applied.right)
    }

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

    /**
     * A save of the run's execution: through its reporter when it has one (what its nodes
     * reported first), and announced to other processes when it was followed (reported, or
     * settled an output early).
     */
    const saveRun = (run: Run, record: ExecutionRecord): Effect.Effect<ExecutionRecord, LeaseLost | StorageError> => {
      const reporter = run.reporter
      if (reporter === undefined) return save(record, run.lease)
      return Effect.tap(
        reporter.saving(save(record, run.lease), versionOf(record.status, record.outputs)),
        () => reports.announce(record.executionId)
      )
    }

    /** The hooks of a run's workflow: its nodes' reports, and outputs saved as they settle. */
    const hooksOf = (run: Run): RunHooks => {
      const reporterOf = () => {
        if (run.reporter === undefined) {
          const current = run.started!
          run.reporter = newReporter({
            executionId: run.executionId,
            attempt: run.lease.attempt,
            version: versionOf(current.status, current.outputs)
          })
        }
        return run.reporter
      }
      // Outputs settle one save at a time, each on the record the previous one saved (the lock
      // is made at the first: most runs settle nothing early).
      let settling: Effect.Semaphore | undefined
      return {
        reportsOf: (nodeId) => ({
          progress: (fraction, message) =>
            Effect.suspend(() => reporterOf().reportsOf(nodeId).progress(fraction, message)),
          log: (message, level) => Effect.suspend(() => reporterOf().reportsOf(nodeId).log(message, level))
        }),
        redact: redactor.text,
        settled: (output: SettledOutput) =>
          (settling ??= Effect.unsafeMakeSemaphore(1)).withPermits(1)(Effect.suspend(() => {
            // While the instance stops, a failure may be the stop's doing: not shown, the run may
            // be handed back (`handBack`).
            if (output._tag === "Failed" && shutdown.unsafeStopping()) return Effect.void
            const event: ExecutionEvent = output._tag === "Produced"
              ? { _tag: "OutputProduced", produced: output.output }
              : { _tag: "OutputFailed", id: output.id, type: output.type, error: output.error }
            return applyThen(run.started!, event, (record) => {
              // Through a reporter from now on, so that this save and the run's end are announced
              // to the streams of other processes (the run is followed).
              reporterOf()
              return saveRun(run, record)
            }).pipe(
              Effect.tap((record) => {
                run.started = record
              }),
              Effect.asVoid,
              Effect.catchTag("LeaseLost", () => Effect.sync(() => runs.stop(run, "lease lost"))),
              Effect.catchTag(
                "StorageError",
                (error) =>
                  Effect.logWarning(`execution ${run.executionId}: an output settled early could not be saved`, error)
              )
            )
          }))
      }
    }

    const fail = (record: ExecutionRecord, lease: Lease, errorMessage: string) =>
      Effect.flatMap(now, (at) =>
        Either.match(failNow(record, at, errorMessage, {}), {
          onLeft: Effect.die,
          onRight: (failed) => save(failed, lease)
        }))

    const leaseLost = (run: Run) =>
      Effect.logWarning(`execution ${run.executionId}: lease lost; another worker owns it now`)

    /**
     * Gives the run's execution back (`ExecutionQueue.release`) to run again on the next start or
     * another worker, the stop not counted against `maxAttempts`; when the release fails, the lease
     * runs out and the execution is taken over all the same.
     */
    const handBack = (run: Run) => queue.release(run.lease).pipe(Effect.ignoreLogged)

    /** The end of a run that was told to stop: recorded as failed, or left alone when its lease is lost. */
    const stopped = (run: Run, started: ExecutionRecord) =>
      Effect.suspend(() => {
        if (run.stop === "lease lost") return leaseLost(run)
        const errorMessage = run.stop === "canceled"
          ? CANCELED_MESSAGE
          : `The execution timed out after ${formatDuration(run.timeoutMs)}.`
        return Effect.flatMap(now, (at) =>
          applyThen(
            started,
            {
              _tag: "Failed",
              at,
              errorMessage,
              // Outputs produced before the stop keep their values.
              produced: started.outputs.flatMap((o) =>
                o.status === "completed" && o.type !== "pending" && o.value !== null
                  ? [{ id: o.id, type: o.type, value: o.value }]
                  : []
              ),
              outputErrors: {},
              outputTypes: run.outputTypes
            },
            (failed) => saveRun(run, failed)
          ))
      })

    /** The workflow of a started run, then its outcome. */
    const workflow = (run: Run, app: CompiledApp, started: ExecutionRecord, restore: Restore) => {
      run.started = started
      // Told to stop (a cancel, a lost lease) before the workflow started: it does not start.
      if (run.stop !== undefined) return stopped(run, started)
      return Effect.clockWith((clock) => {
        run.deadline = clock.unsafeCurrentTimeMillis() + run.timeoutMs
        runs.armed(run)
        // The one interruptible part of the run: a stop interrupts it, and the interruption is
        // recorded by the handler in `process` below.
        const begun = run.running
        run.running = undefined
        const running = restore(
          begun ?? runWorkflow(
            app,
            started.inputs,
            { executionId: started.executionId, appId: started.appId, workspaceId: started.workspaceId },
            config.nodeConcurrency,
            hooksOf(run)
          )
        )
        return Effect.flatMap(running, (result) =>
          // The workflow ended: its outcome is recorded, whatever stop comes now.
          Effect.clockWith((clock) => {
            const at = clock.unsafeCurrentTimeMillis()
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
            // A workflow that fails while the instance stops may fail of the stop (a child process
            // killed with the service, a connection cut): it is handed back, and runs again.
            if (event._tag === "Failed" && shutdown.unsafeStopping()) {
              run.freeSlot()
              return Effect.zipRight(
                Effect.logInfo(
                  `execution ${run.executionId}: failed while the worker stops (${event.errorMessage}); handed back to run again`
                ),
                handBack(run)
              )
            }
            // Applied to the record as last saved: outputs settled early are in it.
            return applyThen(run.started!, event, (ended) => {
              // The slot is free while the outcome is written: the next claim shares its commit.
              run.freeSlot()
              return saveRun(run, ended)
            })
          }))
      })
    }

    /** A claimed run whose workflow is loaded. */
    const loaded = (run: Run, execution: ExecutionRecord, app: CompiledApp, restore: Restore) => {
      run.timeoutMs = (app.definition.timeoutSeconds ?? 0) * 1000 || millis(config.defaultTimeout)
      run.outputTypes = outputTypesOf(app)
      // Not started by its claim (a queue that could not): it starts here.
      if (execution.status === "queued") {
        return Effect.flatMap(
          Effect.flatMap(
            now,
            (at) => applyThen(execution, { _tag: "Started", at }, (s) => save(s, run.lease))
          ),
          (started) => workflow(run, app, started, restore)
        )
      }
      return workflow(run, app, execution, restore)
    }

    const claimed = (run: Run, execution: ExecutionRecord, restore: Restore) => {
      const lease = run.lease
      // Claims given back by a worker that stopped cleanly are not counted (`Lease.counted`).
      if (lease.counted > config.maxAttempts) {
        return fail(
          execution,
          lease,
          `The execution was abandoned at attempt ${lease.attempt}: its worker stopped ${
            lease.counted - 1
          } times before finishing, and at most ${config.maxAttempts} attempts are run.`
        )
      }
      return Effect.matchEffect(catalog.load(execution.workflowId), {
        onFailure: (error) =>
          Effect.zipRight(
            Effect.logError(`execution ${execution.executionId}: workflow cannot be loaded`, error),
            fail(execution, lease, "The app's workflow could not be loaded.")
          ),
        onSuccess: ({ app }) => loaded(run, execution, app, restore)
      })
    }

    /**
     * A claimed run: when its claim started the execution (`Claim.started`), the record as stored
     * is the `Started` transition of the one the claim found, applied here, and announced.
     */
    const body = (run: Run, found: ExecutionRecord, restore: Restore) =>
      run.claimStarted
        ? applyThen(
          found,
          { _tag: "Started", at: run.claimedAt },
          (execution) => Effect.zipRight(events.publish(execution), claimed(run, execution, restore))
        )
        : claimed(run, found, restore)

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
          : handBack(run)
      }
      // Interrupted by the worker stopping, and failing of it on the way (a node that could not
      // end cleanly): the failure is the stop's, the run is handed back.
      if (run.stop === undefined && Cause.isInterrupted(cause) && shutdown.unsafeStopping()) return handBack(run)
      const failure = Cause.failureOption(cause)
      if (Option.isNone(failure)) return defect(run, cause)
      return logged(run, Effect.fail(failure.value)).pipe(Effect.catchAllCause((cause) => defect(run, cause)))
    }

    /**
     * A takeover is said out loud: a previous worker was lost with its lease (a claim that was not
     * given back, `Lease.counted`). A run handed back and taken up again is said at info level.
     */
    const reclaimed = (run: Run) =>
      run.lease.counted > 1
        ? Effect.logWarning(`execution ${run.executionId} reclaimed after lost lease (attempt ${run.lease.attempt})`)
        : Effect.logInfo(
          `execution ${run.executionId} runs again after its worker handed it back (attempt ${run.lease.attempt})`
        )

    const clock = yield* Effect.clock

    /**
     * The run begun at once, in plain code, when it can be: a first attempt, started by its claim,
     * not told to stop, of a workflow loaded already, with no span to make (and, unless `webhooks`,
     * no webhook). Its nodes that answer at once (as the input, text and output nodes do) run
     * here. When they all did and the workflow completed, the answer is the execution started and
     * ended; nothing is recorded or announced. Otherwise the answer is undefined, and a workflow
     * begun is left in `Run.running` for the run's fiber (`process`) to take up where it was left.
     */
    const begin = (run: Run, found: ExecutionRecord, webhooks: boolean): RanAtOnce | undefined => {
      if (
        traced || !run.claimStarted || run.lease.attempt !== 1 || run.stop !== undefined ||
        run.started !== undefined || (!webhooks && found.webhookUrl !== null)
      ) return undefined
      const started = transition(found, { _tag: "Started", at: run.claimedAt })
      if (Either.isLeft(started)) return undefined
      const loaded = doneOf(catalog.load(found.workflowId))
      if (loaded === undefined || Exit.isFailure(loaded)) return undefined
      const app = loaded.value.app
      const execution = started.right
      run.timeoutMs = (app.definition.timeoutSeconds ?? 0) * 1000 || millis(config.defaultTimeout)
      run.outputTypes = outputTypesOf(app)
      run.started = execution
      let begun: Effect.Effect<WorkflowResult>
      try {
        begun = startWorkflow(
          app,
          execution.inputs,
          { executionId: execution.executionId, appId: execution.appId, workspaceId: execution.workspaceId },
          config.nodeConcurrency,
          hooksOf(run)
        )
      } catch (defect) {
        // A node that threw: the fiber meets it as the defect it is (no node runs again).
        run.running = Effect.die(defect)
        return undefined
      }
      const done = doneOf(begun)
      // Begun and not done, or done with something the fiber's path is for (a node's failure, a
      // report to save first): the fiber takes it up where it is.
      if (
        done === undefined || Exit.isFailure(done) || Option.isSome(done.value.firstError) ||
        run.reporter !== undefined
      ) {
        run.running = begun
        return undefined
      }
      const ended = transition(execution, {
        _tag: "Completed",
        at: clock.unsafeCurrentTimeMillis(),
        produced: done.value.produced
      })
      if (Either.isLeft(ended)) {
        // Refused: the fiber's path dies of it, as it would have.
        run.running = begun
        return undefined
      }
      return { started: execution, ended: ended.right }
    }

    /**
     * A run done at once inside its claim's write (`ExecutionQueue.ClaimOptions.runAtOnce`): see
     * `begin`; a run with a webhook is left to `runNow` (its delivery needs an id made in an
     * effect). Its outcome is stored by the claim: `announceAtOnce` announces it once committed.
     */
    const runInClaim = (run: Run, found: ExecutionRecord): RanAtOnce | undefined => begin(run, found, false)

    /** Announces an execution run inside its claim (`runInClaim`), once the claim is committed. */
    const announceAtOnce = (ran: RanAtOnce) => {
      events.unsafePublish(ran.started)
      events.unsafePublish(ran.ended)
      unsafeRecordFinished(ran.ended)
    }

    /**
     * A run done at once, in plain code, when it can be (`begin`). Its outcome is handed to
     * `saveLater`, which saves it (with others), announces it, then gives the run up (`end`); the
     * answer is true. Otherwise nothing was recorded or announced and the answer is false: the run
     * goes its way in a fiber of its own (`process`), taking up the workflow where it was left
     * (`Run.running`) when it was begun, here or in its claim.
     */
    const runNow = (
      run: Run,
      found: ExecutionRecord,
      end: () => void,
      saveLater: (outcome: Outcome) => void
    ): boolean => {
      if (saveAll === undefined) return false
      const ran = begin(run, found, true)
      if (ran === undefined) return false
      events.unsafePublish(ran.started)
      saveLater({ run, record: ran.ended, end })
      return true
    }

    /** Logged with the run's annotations, as the lines of a run's fiber are (the claim loop sets them there). */
    const annotated = <A, E>(run: Run, effect: Effect.Effect<A, E>) =>
      Effect.annotateLogs(effect, { executionId: run.executionId, attempt: run.lease.attempt })

    /**
     * Saves the outcomes of runs done at once (`runNow`) in one write, announces each once stored,
     * and gives each run up (`end`) whatever happened to it.
     */
    const saveOutcomes = (outcomes: ReadonlyArray<Outcome>): Effect.Effect<void> =>
      Effect.gen(function*() {
        const saves: Array<ExecutionStore.Save> = []
        for (const { record, run } of outcomes) {
          saves.push({
            record,
            lease: run.lease,
            outbox: record.webhookUrl === null
              ? undefined
              : entryFor(record, DeliveryId.make(yield* ids.uuid), yield* now, yield* TraceContext.current)
          })
        }
        const results = yield* saveAll!(saves)
        const debug = LogLevel.lessThanEqual(yield* FiberRef.get(FiberRef.currentMinimumLogLevel), LogLevel.Debug)
        const logs: Array<Effect.Effect<void>> = []
        for (let i = 0; i < outcomes.length; i++) {
          const { record, run } = outcomes[i]!
          const result = results[i]!
          if (Either.isRight(result)) {
            events.unsafePublish(record)
            unsafeRecordFinished(record)
            if (debug) logs.push(annotated(run, Effect.logDebug(`execution ${record.executionId} ${record.status}`)))
          } else {
            logs.push(annotated(run, logged(run, Effect.fail(result.left))))
          }
        }
        if (logs.length > 0) yield* Effect.all(logs, { discard: true })
      }).pipe(
        Effect.catchAllCause((cause) =>
          Effect.logError(
            `${outcomes.length} execution(s): could not record their outcome; their leases will expire`,
            cause
          )
        ),
        Effect.ensuring(Effect.sync(() => {
          for (const outcome of outcomes) outcome.end()
        }))
      )

    const process = (run: Run, execution: ExecutionRecord, end: Effect.Effect<void>): Effect.Effect<void> => {
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

    return { process, runNow, runInClaim, announceAtOnce, saveOutcomes }
  })
