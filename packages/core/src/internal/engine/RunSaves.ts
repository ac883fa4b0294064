/**
 * The saves of a worker's runs, written together: what the runs save in one turn of the event loop
 * goes in one `ExecutionStore.saveAll` (one statement on PostgreSQL, one write of the group commit
 * on SQLite, which the worker's next claim joins), as graphile-worker's `completeJobs` completes a
 * batch of jobs. Each save is fenced by its own lease; a terminal one
 * carries its webhook delivery (`WebhookOutbox.entryFor`), written with it. A save stored is
 * announced in this process (`ExecutionEvents`), a terminal one counted (`AppexecMetrics`) and, at
 * debug level only, logged.
 *
 * A run either waits for its save (`save`: a save before its end, or an end its reporter must
 * follow), offers one and goes on (`offer`: its start), or hands its outcome over and ends
 * (`handOver`): the writer then saves it, says what went wrong (a lost lease, storage), and
 * removes the run from the worker's runs once it is written, so that its lease is kept until then.
 * A store without `saveAll`, or whose `save` was replaced (`saveAllOf`), is saved one execution at
 * a time through its `save`.
 *
 * The saves of one run are written in their order, one write at a time: a save offered while an
 * earlier one of its run waits for the writer takes that one's place (each save of a run is the
 * whole record as the run has it, so the later one holds the earlier), and one offered while an
 * earlier one is being written waits for that write. A run that starts and ends in one turn (a
 * quick workflow) so writes its execution once, queued to finished, as graphile-worker completes
 * a job with one write after its lock: its start is announced all the same, before its end.
 */
import { type Cause, Effect, Either, Exit, FiberRef, FiberSet, LogLevel, type Scope } from "effect"
import { unsafeRecordFinished } from "../../AppexecMetrics.js"
import type { LeaseLost, StorageError } from "../../Errors.js"
import { ExecutionEvents } from "../../ExecutionEvents.js"
import { isTerminal } from "../../ExecutionLifecycle.js"
import type { ExecutionRecord } from "../../ExecutionRecord.js"
import * as ExecutionStore from "../../ExecutionStore.js"
import { IdGenerator } from "../../IdGenerator.js"
import * as TraceContext from "../../TraceContext.js"
import { DeliveryId, entryFor } from "../../WebhookOutbox.js"
import type { Run, Runs } from "./Runs.js"

/**
 * Most saves in one write: as many as one claim takes (`Worker`'s `CLAIM_BATCH`), so the outcomes
 * of a claim's short runs that end in one turn go in one statement. On PostgreSQL, 1,024 rather
 * than 256 drains about a fifth more no-op executions a second with one worker process
 * (docs/performance.md).
 */
const SAVE_BATCH = 1024

/** What a save can meet. */
type Failure = LeaseLost | StorageError

/** The saves of one worker's runs. */
export interface RunSaves {
  /** Saves the run's execution as `record` under its lease, and announces it once stored: the record. */
  readonly save: (run: Run, record: ExecutionRecord) => Effect.Effect<ExecutionRecord, Failure>
  /**
   * Offers a save and goes on: written with the next write (or in place of it, by a later save of
   * the run) and announced once stored; a lease found lost stops the run (`Runs.stop`), any other
   * failure is logged.
   */
  readonly offer: (run: Run, record: ExecutionRecord) => void
  /**
   * Hands the run's outcome over: saved with the others of its turn and announced, then the run is
   * removed from the worker's runs; a failure is logged, and a write that dies (a bug) is handed
   * to `died` in a fiber of the writer's. The run's fiber ends without waiting.
   */
  readonly handOver: (
    run: Run,
    record: ExecutionRecord,
    died: (cause: Cause.Cause<unknown>) => Effect.Effect<void>
  ) => Effect.Effect<void>
  /** Completes once every save handed over or waited for is written. */
  readonly awaitIdle: Effect.Effect<void>
}

/** A save waiting for its write. */
interface Item {
  readonly run: Run
  readonly save: ExecutionStore.Save
  /** The waiting runs' resumes (a save waited for, and those it took the place of). */
  readonly resumes: ReadonlyArray<(exit: Exit.Exit<void, Failure>) => void>
  /** Whether it is the run's outcome handed over: the run is removed once it is written. */
  readonly ends: boolean
  /** For an outcome handed over: what a write that dies does for its run. */
  readonly died?: ((cause: Cause.Cause<unknown>) => Effect.Effect<void>) | undefined
  /** The records of the saves it took the place of, oldest first: announced before its own. */
  readonly earlier: ReadonlyArray<ExecutionRecord>
}

/** `later` in the place of `earlier`, a save of the same run not written yet. */
const replacing = (earlier: Item, later: Item): Item => ({
  run: later.run,
  save: later.save,
  resumes: earlier.resumes.length === 0 ? later.resumes : [...earlier.resumes, ...later.resumes],
  ends: later.ends,
  died: later.died,
  earlier: [...earlier.earlier, earlier.save.record, ...later.earlier]
})

/** The writer of the saves of `runs`, for as long as the scope lasts. */
export const make = (runs: Runs): Effect.Effect<
  RunSaves,
  never,
  Scope.Scope | ExecutionStore.ExecutionStore | ExecutionEvents | IdGenerator
> =>
  Effect.gen(function*() {
    const store = yield* ExecutionStore.ExecutionStore
    const events = yield* ExecutionEvents
    const ids = yield* IdGenerator
    const debug = LogLevel.lessThanEqual(yield* FiberRef.get(FiberRef.currentMinimumLogLevel), LogLevel.Debug)
    const saveAll = ExecutionStore.saveAllOf(store)
    const writers = yield* FiberSet.make<void>()
    // Taken where interruption is allowed (a layer is built uninterruptibly); each write is not.
    const fork = yield* Effect.interruptible(FiberSet.runtime(writers)<never>())

    const writeAll = (saves: ReadonlyArray<ExecutionStore.Save>) =>
      saveAll !== undefined
        ? saveAll(saves)
        : Effect.forEach(saves, (s) => Effect.either(store.save(s.record, s.lease, s.outbox)), {
          concurrency: "unbounded"
        })

    /** Logged with the run's execution and attempt, as the lines of its fiber are. */
    const annotated = (run: Run, effect: Effect.Effect<void>) =>
      Effect.annotateLogs(effect, { executionId: run.executionId, attempt: run.lease.attempt })

    /** What went wrong with an outcome handed over, said for the operator. */
    const failed = (run: Run, error: Failure) =>
      annotated(
        run,
        error._tag === "LeaseLost"
          ? Effect.logWarning(`execution ${run.executionId}: lease lost; another worker owns it now`)
          : Effect.logError(
            `execution ${run.executionId}: storage failed; the lease will expire and it runs again`,
            error
          )
      )

    /**
     * The end of a write, in plain code: each save stored is announced (with those it took the
     * place of), counted when it is terminal and, at debug level, logged; each waiting run is
     * resumed, each run of an outcome handed over removed; what went wrong with those and with
     * saves offered is logged; the next save of each run, offered meanwhile, goes to the writer.
     */
    const settle = (batch: ReadonlyArray<Item>, results: ReadonlyArray<Either.Either<void, Failure>>) => {
      const lines: Array<Effect.Effect<void>> = []
      for (let i = 0; i < batch.length; i++) {
        const item = batch[i]!
        const { resumes, run, save: { record } } = item
        const result = results[i]!
        if (Either.isRight(result)) {
          for (const earlier of item.earlier) events.unsafePublish(earlier)
          events.unsafePublish(record)
          if (isTerminal(record.status)) unsafeRecordFinished(record)
          if (debug) lines.push(annotated(run, Effect.logDebug(`execution ${record.executionId} ${record.status}`)))
        } else if (resumes.length === 0) {
          lines.push(failed(run, result.left))
          if (!item.ends && result.left._tag === "LeaseLost") runs.stop(run, "lease lost")
        }
        for (const resume of resumes) resume(Either.isRight(result) ? Exit.void : Exit.fail(result.left))
        if (item.ends) runs.remove(run)
        written(run)
      }
      return lines.length === 0 ? Effect.void : Effect.all(lines, { discard: true })
    }

    /**
     * A write that died (a bug): every waiting save of it fails so; each outcome handed over has
     * its `died` run in a fiber of its own (it may save again), its run removed after it.
     */
    const died = (batch: ReadonlyArray<Item>, cause: Cause.Cause<never>) =>
      Effect.sync(() => {
        for (const item of batch) {
          const run = item.run
          for (const resume of item.resumes) resume(Exit.failCause(cause))
          if (item.ends) {
            if (item.resumes.length === 0 && item.died !== undefined) {
              fork(Effect.ensuring(annotated(run, item.died(cause)), Effect.sync(() => runs.remove(run))))
            } else runs.remove(run)
          }
          written(run)
        }
      })

    /** The saves offered since the last writer took them, one per run. */
    let pending: Array<Item> = []
    /** Where each run's save is in `pending`. */
    const pendingOf = new Map<Run, number>()
    /** The runs whose save is being written, each with the save of it offered meanwhile, if any. */
    const writing = new Map<Run, Item | undefined>()
    /** Whether a writer was started that has not taken `pending` yet. */
    let scheduled = false
    /** Writes `items` (`SAVE_BATCH` at a time), and ends each save. */
    const write = (items: ReadonlyArray<Item>): Effect.Effect<void> => {
      const batch = items.length <= SAVE_BATCH ? items : items.slice(0, SAVE_BATCH)
      const written = Effect.flatMap(writeAll(batch.map((item) => item.save)), (results) => settle(batch, results))
        .pipe(Effect.catchAllCause((cause) => died(batch, cause)))
      return items.length <= SAVE_BATCH ? written : Effect.zipRight(written, write(items.slice(SAVE_BATCH)))
    }
    /** Takes what was offered, and writes it. */
    const writer = Effect.uninterruptible(Effect.suspend(() => {
      scheduled = false
      const items = pending
      pending = []
      pendingOf.clear()
      for (const item of items) writing.set(item.run, undefined)
      return write(items)
    }))
    /**
     * Adds a save to the next write, in the place of its run's save still waiting there, or after
     * its run's save being written. The first since the last write began starts a writer, which
     * runs once the fibers ready now have run: so the runs that end in one turn go in one write. A
     * write does not wait for the one before it (on PostgreSQL they go on connections of their own).
     */
    const add = (item: Item) => {
      const run = item.run
      if (writing.has(run)) {
        const next = writing.get(run)
        writing.set(run, next === undefined ? item : replacing(next, item))
        return
      }
      const at = pendingOf.get(run)
      if (at !== undefined) {
        pending[at] = replacing(pending[at]!, item)
        return
      }
      pendingOf.set(run, pending.length)
      pending.push(item)
      if (scheduled) return
      scheduled = true
      fork(writer, { immediate: false })
    }
    /** The run's save is written: the one it offered meanwhile goes to the writer. */
    const written = (run: Run) => {
      const next = writing.get(run)
      writing.delete(run)
      if (next !== undefined) add(next)
    }

    /** The save of `record`: with its webhook delivery when it is terminal and has a webhook. */
    const saveOf = (run: Run, record: ExecutionRecord): Effect.Effect<ExecutionStore.Save> =>
      isTerminal(record.status) && record.webhookUrl !== null
        ? Effect.map(
          Effect.all([ids.uuid, Effect.clockWith((clock) => clock.currentTimeMillis), TraceContext.current]),
          ([id, now, traceParent]) => ({
            record,
            lease: run.lease,
            outbox: entryFor(record, DeliveryId.make(id), now, traceParent)
          })
        )
        : Effect.succeed({ record, lease: run.lease, outbox: undefined })

    return {
      save: (run, record) =>
        Effect.flatMap(saveOf(run, record), (save) =>
          Effect.async<ExecutionRecord, Failure>((resume) => {
            add({ run, save, resumes: [(exit) => resume(Exit.as(exit, record))], ends: false, earlier: [] })
          })),
      offer: (run, record) =>
        add({ run, save: { record, lease: run.lease, outbox: undefined }, resumes: [], ends: false, earlier: [] }),
      handOver: (run, record, died) =>
        isTerminal(record.status) && record.webhookUrl !== null
          ? Effect.map(saveOf(run, record), (save) => {
            add({ run, save, resumes: [], ends: true, died, earlier: [] })
          })
          : Effect.sync(() =>
            add({
              run,
              save: { record, lease: run.lease, outbox: undefined },
              resumes: [],
              ends: true,
              died,
              earlier: []
            })
          ),
      awaitIdle: FiberSet.awaitEmpty(writers)
    }
  })
