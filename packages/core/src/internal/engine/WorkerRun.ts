/**
 * One run of the worker: a claimed execution taken to its end, in the fiber the claim loop gives
 * it. The fiber is uninterruptible but while its workflow runs: a stop (cancel, timeout, lost
 * lease, the worker stopping) interrupts the workflow, and the outcome is recorded through the
 * status state machine (`ExecutionLifecycle.transition`), with its webhook delivery when it has
 * one, saved with the other saves of its turn (`RunSaves`). A run is never failed because its
 * process stops: interrupted by the worker stopping, or failing while the instance stops
 * (`Shutdown`), it is handed back (`ExecutionQueue.release`). A claim writes the lease alone: the
 * run applies the `Started` transition and offers it to the writer (`RunSaves.offer`), and its
 * workflow runs meanwhile; a run that ends in that turn writes its start with its end.
 *
 * The run's lease, stop and deadline are the registry's (`Runs`); what the run keeps as it goes
 * (the record as last saved, its reporter) is its own (`RunState`).
 */
import { Cause, Duration, Effect, Either, Option } from "effect"
import type { CompiledApp } from "../../AppDefinition.js"
import { AppexecConfig, millis } from "../../AppexecConfig.js"
import { unsafeRecordReclaimed } from "../../AppexecMetrics.js"
import type { LeaseLost, StorageError } from "../../Errors.js"
import { type ExecutionEvent, failNow, isTerminal, transition } from "../../ExecutionLifecycle.js"
import { ExecutionQueue } from "../../ExecutionQueue.js"
import type { ExecutionRecord } from "../../ExecutionRecord.js"
import { ExecutionStore } from "../../ExecutionStore.js"
import { Shutdown } from "../../Shutdown.js"
import * as TraceContext from "../../TraceContext.js"
import { AppCatalog } from "../facade/AppCatalog.js"
import { CANCELED_MESSAGE } from "./Cancellations.js"
import type { Run, Runs } from "./Runs.js"
import * as RunState from "./RunState.js"
import { runWorkflow, type WorkflowResult } from "./WorkflowRunner.js"

const formatDuration = (ms: number) => Duration.format(Duration.millis(ms))

/** Restores interruptibility inside the run's otherwise uninterruptible fiber. */
type Restore = <A, E, R>(effect: Effect.Effect<A, E, R>) => Effect.Effect<A, E, R>

/** A refused transition is a bug: it dies. */
const applied = (record: ExecutionRecord, event: ExecutionEvent): Effect.Effect<ExecutionRecord> => {
  const next = transition(record, event)
  return Either.isLeft(next) ? Effect.die(next.left) : Effect.succeed(next.right)
}

/**
 * The work of the runs of `runs`: `process(run)` runs one claimed execution to its end, or gives
 * it up when it is stopped, and removes it from `runs` as it ends. A stop that comes after the
 * workflow has ended finds nothing to interrupt: the outcome is recorded (and a write under way
 * is never cut off).
 */
export const make = (runs: Runs) =>
  Effect.gen(function*() {
    const config = yield* AppexecConfig
    const queue = yield* ExecutionQueue
    const store = yield* ExecutionStore
    const catalog = yield* AppCatalog

    const shutdown = yield* Shutdown
    const defaultTimeoutMs = millis(config.defaultTimeout)
    const now = Effect.clockWith((clock) => clock.currentTimeMillis)
    // Read in plain code on the run's path (each `clockWith` is a step of the runtime).
    const clock = yield* Effect.clock
    // A span per run only when spans go somewhere: the default tracer keeps them to itself.
    const traced = yield* TraceContext.spansExported
    const states = yield* RunState.make(runs)
    const { saves } = states

    const fail = (run: Run, record: ExecutionRecord, errorMessage: string) =>
      Effect.flatMap(now, (at) =>
        Either.match(failNow(record, at, errorMessage, {}), {
          onLeft: Effect.die,
          onRight: (failed) => saves.save(run, failed)
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
    const stopped = (state: RunState.RunState, started: ExecutionRecord) =>
      Effect.suspend(() => {
        const run = state.run
        if (run.stop === "lease lost") return leaseLost(run)
        const errorMessage = run.stop === "canceled"
          ? CANCELED_MESSAGE
          : `The execution timed out after ${formatDuration(state.timeoutMs)}.`
        return Effect.flatMap(now, (at) =>
          Effect.flatMap(
            applied(started, {
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
              outputTypes: state.outputTypes
            }),
            (failed) => state.save(failed)
          ))
      })

    /** The outcome of a workflow that ended: recorded, whatever stop comes now. */
    const ended = (
      state: RunState.RunState,
      result: WorkflowResult
    ): Effect.Effect<unknown, LeaseLost | StorageError> => {
      const run = state.run
      const at = clock.unsafeCurrentTimeMillis()
      const event: ExecutionEvent = Option.isNone(result.firstError)
        ? { _tag: "Completed", at, produced: result.produced }
        : {
          _tag: "Failed",
          at,
          errorMessage: result.firstError.value,
          produced: result.produced,
          outputErrors: result.outputErrors,
          outputTypes: state.outputTypes
        }
      // The slot is free while the outcome is written: the next claim shares its write.
      runs.freeSlot(run)
      // A workflow that fails while the instance stops may fail of the stop (a child process
      // killed with the service, a connection cut): it is handed back, and runs again.
      if (event._tag === "Failed" && shutdown.unsafeStopping()) {
        return Effect.zipRight(
          Effect.logInfo(
            `execution ${run.executionId}: failed while the worker stops (${event.errorMessage}); handed back to run again`
          ),
          handBack(run)
        )
      }
      // Applied to the record as last saved: outputs settled early are in it.
      const next = transition(state.started!, event)
      return Either.isLeft(next) ? Effect.die(next.left) : state.end(next.right, (cause) => defect(run, cause))
    }

    /** The workflow of a started run, then its outcome. */
    const workflow = (state: RunState.RunState, app: CompiledApp, started: ExecutionRecord, restore: Restore) => {
      const run = state.run
      state.started = started
      // Told to stop (a cancel, a lost lease) before the workflow started: it does not start.
      if (run.stop !== undefined) return stopped(state, started)
      runs.arm(run, clock.unsafeCurrentTimeMillis(), state.timeoutMs)
      // The one interruptible part of the run: a stop interrupts it, and the interruption is
      // recorded by the handler in `process` below.
      const running = restore(
        runWorkflow(
          app,
          started.inputs,
          { executionId: started.executionId, appId: started.appId, workspaceId: started.workspaceId },
          config.nodeConcurrency,
          state
        )
      )
      return Effect.flatMap(running, (result) => ended(state, result))
    }

    /** A claimed run whose workflow is loaded. */
    const loaded = (state: RunState.RunState, execution: ExecutionRecord, app: CompiledApp, restore: Restore) => {
      state.timeoutMs = (app.definition.timeoutSeconds ?? 0) * 1000 || defaultTimeoutMs
      state.outputTypes = RunState.outputTypesOf(app)
      // Taken up again after a start: it goes on from it.
      if (execution.status !== "queued") return workflow(state, app, execution, restore)
      // It starts now: its start is offered to the writer, and its workflow runs meanwhile. A run
      // that ends in this turn writes its execution once (its end takes the start's place).
      const started = transition(execution, { _tag: "Started", at: clock.unsafeCurrentTimeMillis() })
      if (Either.isLeft(started)) return Effect.die(started.left)
      saves.offer(state.run, started.right)
      return workflow(state, app, started.right, restore)
    }

    const claimed = (state: RunState.RunState, execution: ExecutionRecord, restore: Restore) => {
      const run = state.run
      const lease = run.lease
      // Claims given back by a worker that stopped cleanly are not counted (`Lease.counted`).
      if (lease.counted > config.maxAttempts) {
        return fail(
          run,
          execution,
          `The execution was abandoned at attempt ${lease.attempt}: its worker stopped ${
            lease.counted - 1
          } times before finishing, and at most ${config.maxAttempts} attempts are run.`
        )
      }
      return Effect.matchEffect(catalog.load(execution.workflowId), {
        onFailure: (error) =>
          Effect.zipRight(
            Effect.logError(`execution ${execution.executionId}: workflow cannot be loaded`, error),
            fail(run, execution, "The app's workflow could not be loaded.")
          ),
        onSuccess: ({ app }) => loaded(state, execution, app, restore)
      })
    }

    /** A claimed run, from the execution as its claim found it. */
    const body = (state: RunState.RunState, restore: Restore) => claimed(state, state.run.claim.execution, restore)

    /** A defect is a bug: log it for the operator and fail the execution, rather than leave it
     * running until its lease expires and run it again into the same bug. */
    const defect = (run: Run, cause: Cause.Cause<unknown>) =>
      Effect.gen(function*() {
        yield* Effect.logError(`execution ${run.executionId}: unexpected error in the worker`, cause)
        const current = yield* store.get(run.executionId)
        if (Option.isSome(current) && !isTerminal(current.value.status)) {
          yield* fail(run, current.value, "The execution failed unexpectedly.")
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
    const failed = (state: RunState.RunState, cause: Cause.Cause<LeaseLost | StorageError>): Effect.Effect<unknown> => {
      const run = state.run
      if (Cause.isInterruptedOnly(cause)) {
        // Interrupted by a stop: record it. Interrupted by the worker stopping: give the lease back.
        return run.stop !== undefined && state.started !== undefined
          ? logged(run, stopped(state, state.started)).pipe(Effect.catchAllCause((cause) => defect(run, cause)))
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
     * A takeover is said out loud and counted (`appexec_executions_reclaimed_total`): a previous
     * worker was lost with its lease (a claim that was not given back, `Lease.counted`). A run
     * handed back and taken up again is said at info level, and not counted.
     */
    const reclaimed = (run: Run) =>
      run.lease.counted > 1
        ? Effect.zipRight(
          Effect.sync(() => unsafeRecordReclaimed(1)),
          Effect.logWarning(`execution ${run.executionId} reclaimed after lost lease (attempt ${run.lease.attempt})`)
        )
        : Effect.logInfo(
          `execution ${run.executionId} runs again after its worker handed it back (attempt ${run.lease.attempt})`
        )

    /** The whole of one run, in its fiber; it leaves `runs` as it ends. */
    const process = (run: Run): Effect.Effect<void> => {
      const state = states.of(run)
      // A run whose outcome was handed over is removed by the writer, once it is written.
      const end = Effect.sync(() => {
        if (!state.handedOver) runs.remove(run)
      })
      const whole = Effect.uninterruptibleMask((restore) =>
        Effect.matchCauseEffect(
          run.lease.attempt > 1 ? Effect.zipRight(reclaimed(run), body(state, restore)) : body(state, restore),
          {
            onFailure: (cause) => Effect.zipRight(failed(state, cause), end),
            onSuccess: () => end
          }
        )
      )
      return traced
        // The span of the run, without the cost of capturing a stack trace per execution.
        ? whole.pipe(
          Effect.withSpan("Worker.process", { captureStackTrace: false }),
          TraceContext.continueFrom(run.claim.execution.traceParent)
        )
        : whole
    }

    return {
      process,
      /** Completes once every save of the runs is written (`RunSaves.awaitIdle`). */
      awaitSaves: saves.awaitIdle
    }
  })
