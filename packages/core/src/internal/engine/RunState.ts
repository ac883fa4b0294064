/**
 * What one run keeps as it goes, written by its own fiber alone: the execution as last saved, the
 * reporter of its nodes (made at their first report), and the hooks its workflow calls
 * (`WorkflowRunner.RunHooks`): reports, outputs saved as they settle or show a partial result, masking. The run's lease,
 * stop and deadline are not here: they are its registry's (`Runs`).
 */
import type { OutputType } from "@appexec/api/Execution"
import { type Cause, Effect, Either } from "effect"
import type { CompiledApp } from "../../AppDefinition.js"
import type { LeaseLost, StorageError } from "../../Errors.js"
import { type ExecutionEvent, type ProducedOutput, transition } from "../../ExecutionLifecycle.js"
import { type ExecutionRecord, versionOf } from "../../ExecutionRecord.js"
import { ExecutionReports } from "../../ExecutionReports.js"
import { Redactor } from "../../Redactor.js"
import { Shutdown } from "../../Shutdown.js"
import * as Reporter from "./Reporter.js"
import type { Run, Runs } from "./Runs.js"
import * as RunSaves from "./RunSaves.js"
import type { RunHooks, SettledOutput } from "./WorkflowRunner.js"

/** The declared type of each output of an app. */
export type OutputTypes = Readonly<Record<string, Exclude<OutputType, "pending">>>

/** The compiled app's output types, made once per compiled app rather than per run. */
export const outputTypesOf = (() => {
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

/** One run's own state, and the hooks of its workflow. */
export interface RunState extends RunHooks {
  readonly run: Run
  /** The execution as last saved `running` (with the outputs settled so far), once it was. */
  started: ExecutionRecord | undefined
  /** How long the run may take (ms), once its workflow is loaded. */
  timeoutMs: number
  /** Its app's output types, once its workflow is loaded. */
  outputTypes: OutputTypes
  /** Whether the run's outcome was handed over (`end`): the writer removes the run once it is written. */
  readonly handedOver: boolean
  /**
   * Saves the run's execution: through its reporter when it has one (what its nodes reported
   * first), and announced to other processes then (the run is followed).
   */
  readonly save: (record: ExecutionRecord) => Effect.Effect<ExecutionRecord, LeaseLost | StorageError>
  /**
   * Saves the run's outcome: handed over to be written with the others of its turn when nothing
   * must follow it (`RunSaves.handOver`: the run's fiber may end), else saved as `save` does.
   */
  readonly end: (
    record: ExecutionRecord,
    died: (cause: Cause.Cause<unknown>) => Effect.Effect<void>
  ) => Effect.Effect<unknown, LeaseLost | StorageError>
}

/** The states of one worker's runs, and the saves they share (`RunSaves`). */
export const make = (runs: Runs) =>
  Effect.gen(function*() {
    const reports = yield* ExecutionReports
    const newReporter = yield* Reporter.factory
    // What leaves a run (outputs, failure messages) is masked as the runner makes it.
    const redactor = yield* Redactor
    const shutdown = yield* Shutdown
    const saves = yield* RunSaves.make(runs)

    class State implements RunState {
      started: ExecutionRecord | undefined = undefined
      handedOver = false
      timeoutMs = 0
      outputTypes: OutputTypes = {}
      /** What the run's nodes report, once one has. */
      private reporter: Reporter.Reporter | undefined = undefined
      /** Outputs settle one save at a time, each on the record the previous one saved (made at the first). */
      private settling: Effect.Semaphore | undefined = undefined
      readonly redact = redactor.text
      constructor(readonly run: Run) {}

      private reporterOf(): Reporter.Reporter {
        if (this.reporter === undefined) {
          const current = this.started!
          this.reporter = newReporter({
            executionId: this.run.executionId,
            attempt: this.run.lease.attempt,
            version: versionOf(current.status, current.outputs)
          })
        }
        return this.reporter
      }

      save(record: ExecutionRecord): Effect.Effect<ExecutionRecord, LeaseLost | StorageError> {
        const reporter = this.reporter
        if (reporter === undefined) return saves.save(this.run, record)
        return Effect.tap(
          reporter.saving(saves.save(this.run, record), versionOf(record.status, record.outputs)),
          () => reports.announce(record.executionId)
        )
      }

      end(
        record: ExecutionRecord,
        died: (cause: Cause.Cause<unknown>) => Effect.Effect<void>
      ): Effect.Effect<unknown, LeaseLost | StorageError> {
        if (this.reporter !== undefined) return this.save(record)
        this.handedOver = true
        return saves.handOver(this.run, record, died)
      }

      reportsOf(nodeId: string): ReturnType<RunHooks["reportsOf"]> {
        return {
          progress: (fraction, message) =>
            Effect.suspend(() => this.reporterOf().reportsOf(nodeId).progress(fraction, message)),
          log: (message, level) => Effect.suspend(() => this.reporterOf().reportsOf(nodeId).log(message, level)),
          preview: (bytes, mediaType) =>
            Effect.suspend(() => this.reporterOf().reportsOf(nodeId).preview(bytes, mediaType))
        }
      }

      partial(output: ProducedOutput): Effect.Effect<void> {
        return this.settled({ _tag: "Produced", output })
      }

      settled(output: SettledOutput): Effect.Effect<void> {
        return (this.settling ??= Effect.unsafeMakeSemaphore(1)).withPermits(1)(Effect.suspend(() => {
          // While the instance stops, a failure may be the stop's doing: not shown, the run may
          // be handed back.
          if (output._tag === "Failed" && shutdown.unsafeStopping()) return Effect.void
          const event: ExecutionEvent = output._tag === "Produced"
            ? { _tag: "OutputProduced", produced: output.output }
            : { _tag: "OutputFailed", id: output.id, type: output.type, error: output.error }
          const next = transition(this.started!, event)
          if (Either.isLeft(next)) return Effect.die(next.left)
          // Through a reporter from now on, so that this save and the run's end are announced to
          // the streams of other processes (the run is followed).
          this.reporterOf()
          return this.save(next.right).pipe(
            Effect.tap((record) => {
              this.started = record
            }),
            Effect.asVoid,
            Effect.catchTag("LeaseLost", () => Effect.sync(() => runs.stop(this.run, "lease lost"))),
            Effect.catchTag(
              "StorageError",
              (error) =>
                Effect.logWarning(
                  `execution ${this.run.executionId}: an output settled early could not be saved`,
                  error
                )
            )
          )
        }))
      }
    }

    return {
      /** The state of a run about to start. */
      of: (run: Run): RunState => new State(run),
      /** The saves of the runs (`RunSaves`). */
      saves
    }
  })
