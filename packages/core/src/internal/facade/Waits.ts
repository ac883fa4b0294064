/**
 * Reads of executions that may wait (docs/api.md#long-polling): until the execution ends, or
 * until it differs from what the caller holds. Waits are woken by the events of this process;
 * one look at the store per interval covers the executions other processes change.
 */
import type { Authentication } from "@appexec/api"
import type { Execution } from "@appexec/api/Execution"
import { ExecutionId } from "@appexec/api/Ids"
import { type Context, Duration, Effect, Option, type Scope } from "effect"
import type { Appexec } from "../../Appexec.js"
import { AppexecConfig, millis } from "../../AppexecConfig.js"
import { ExecutionNotFound, type StorageError } from "../../Errors.js"
import { type Change, ExecutionEvents } from "../../ExecutionEvents.js"
import { isTerminal } from "../../ExecutionLifecycle.js"
import { executionJson, type ExecutionRecord, type ExecutionView, toExecution, viewOf } from "../../ExecutionRecord.js"
import { ExecutionStore } from "../../ExecutionStore.js"
import * as TraceContext from "../../TraceContext.js"
import { isUuid, type Visibility } from "./Visibility.js"
import type * as WaitingFor from "./WaitingFor.js"

type Principal = Authentication.Principal

/** Options of a read of an execution. */
export interface GetOptions {
  /** Hold the answer until the execution is finished or this much time has passed (long polling). */
  readonly wait?: Duration.DurationInput | undefined
  /**
   * With `wait`: whether an answer (the JSON text `getJson` writes) is the one the caller holds
   * already, as an `If-None-Match` tells. The answer is then held until the execution differs
   * from it (any change, not only its end) or `wait` has passed, and given at once when it
   * differs already or has finished.
   */
  readonly unchanged?: ((json: string) => boolean) | undefined
}

const recordJson = (record: ExecutionRecord) => executionJson(viewOf(record))

/** The reads that wait, and the look at the store (forked in the scope) that wakes them. */
export const make = (visibility: Visibility, waitingFor: WaitingFor.WaitingForAny): Effect.Effect<
  Pick<Context.Tag.Service<Appexec>["executions"], "get" | "getJson" | "await">,
  never,
  AppexecConfig | ExecutionStore | ExecutionEvents | Scope.Scope
> =>
  Effect.gen(function*() {
    const config = yield* AppexecConfig
    const executionStore = yield* ExecutionStore
    const events = yield* ExecutionEvents
    const traced = yield* TraceContext.spansExported
    const { visibleExecution } = visibility

    const waitForEnd = (executionId: string): Effect.Effect<ExecutionRecord, ExecutionNotFound | StorageError> =>
      Effect.uninterruptibleMask((restore) => {
        if (!isUuid(executionId)) return Effect.fail(new ExecutionNotFound({ executionId }))
        // Registered before reading, so a transition between the read and the wait is not missed;
        // removed however the wait ends (many may wait at once: no scope per wait).
        const id = ExecutionId.make(executionId, { disableValidation: true })
        const waiting = events.unsafeAwaitTerminal(id)
        // The first look reads the view (no JSON decoded): the record is read only when it has
        // already ended; otherwise its terminal record comes with the wake-up.
        return restore(
          Effect.flatMap(executionStore.getView(id), (view) =>
            Option.isNone(view)
              ? Effect.fail(new ExecutionNotFound({ executionId }))
              : isTerminal(view.value.status)
              ? visibleExecution(executionId)
              : waiting.wait)
        ).pipe(Effect.ensuring(Effect.sync(waiting.release)))
      })

    /**
     * The answer to a poll of a view: its JSON, with its queue position while it is queued, and
     * what it waits for when no running worker could run it.
     */
    const answerJson = (view: ExecutionView): Effect.Effect<string, StorageError> =>
      view.status === "queued"
        ? Effect.zipWith(
          executionStore.queuePosition(ExecutionId.make(view.executionId, { disableValidation: true })),
          waitingFor(view),
          (position, reason) => executionJson(view, position, reason)
        )
        : Effect.succeed(executionJson(view))

    /** The polling view of a record, with its queue position (and what it waits for) while it is queued. */
    const answer = (record: ExecutionRecord): Effect.Effect<Execution, StorageError> =>
      record.status === "queued"
        ? Effect.zipWith(
          executionStore.queuePosition(record.executionId),
          waitingFor(record),
          (queuePosition, reason) => ({
            ...toExecution(record),
            queuePosition,
            ...(reason === undefined ? {} : { waitingFor: reason })
          })
        )
        : Effect.succeed(toExecution(record))

    /**
     * The answer (`answerJson`) of an execution of the principal's workspace once it is not
     * `unchanged`: at once when it differs already or has finished, else at its first change;
     * as last read when `wait` passes first.
     */
    const waitForChange = (
      principal: Principal,
      executionId: string,
      wait: Duration.DurationInput,
      unchanged: (json: string) => boolean
    ): Effect.Effect<string, ExecutionNotFound | StorageError> =>
      Effect.uninterruptibleMask((restore) => {
        if (!isUuid(executionId)) return Effect.fail(new ExecutionNotFound({ executionId }))
        const id = ExecutionId.make(executionId, { disableValidation: true })
        // Registered before the first read, and each change's successor taken before the read it
        // causes: a change made while the store is read is never missed.
        const watching = events.unsafeAwaitChange(id)
        const read = Effect.flatMap(executionStore.getView(id), (
          view
        ): Effect.Effect<{ readonly view: ExecutionView; readonly json: string }, ExecutionNotFound | StorageError> =>
          Option.isNone(view) || view.value.workspaceId !== principal.workspaceId
            ? Effect.fail(new ExecutionNotFound({ executionId }))
            : answerJson(view.value).pipe(Effect.map((json) => ({ view: view.value, json }))))
        let latest: string | undefined
        const look = (next: Effect.Effect<Change>): Effect.Effect<string, ExecutionNotFound | StorageError> =>
          Effect.flatMap(read, ({ json, view }) => {
            latest = json
            return !unchanged(json) || isTerminal(view.status)
              ? Effect.succeed(json)
              : Effect.flatMap(next, (change) => look(change.next))
          })
        return restore(
          Effect.flatMap(Effect.timeoutOption(look(watching.next), wait), (changed) =>
            Option.match(changed, {
              // Unchanged for all of `wait`: answered as last read (read now if no read ended in time).
              onNone: () => latest === undefined ? Effect.map(read, ({ json }) => json) : Effect.succeed(latest),
              onSome: Effect.succeed
            }))
        ).pipe(Effect.ensuring(Effect.sync(watching.release)))
      })

    /** The view of each watched execution as the last look at the store saw it, as JSON, by id. */
    let lastSeen: ReadonlyMap<string, string> = new Map()

    // Executions run by other processes on the same store end (or change) without an event here:
    // one look at the store per interval covers every waiter at once.
    const lookAtStore = Effect.gen(function*() {
      const waited = yield* events.waited
      if (waited.length > 0) {
        const finished = yield* executionStore.finishedAmong(waited)
        for (const executionId of finished) {
          const record = yield* executionStore.get(executionId)
          if (Option.isSome(record)) yield* events.settle(record.value)
        }
      }
      const watched = yield* events.watched
      const views = watched.length === 0 ? [] : yield* executionStore.viewsAmong(watched)
      const seen = new Map(views.map((view) => [view.executionId, executionJson(view)]))
      // A view the last look did not see may be news to a waiter too: its waiters read the store
      // again, and only those it differs for answer.
      for (const [executionId, json] of seen) {
        if (lastSeen.get(executionId) !== json) {
          yield* events.changed(ExecutionId.make(executionId, { disableValidation: true }))
        }
      }
      lastSeen = seen
    }).pipe(Effect.catchAll((error) => Effect.logWarning("looking for changed executions failed", error)))
    yield* lookAtStore.pipe(
      Effect.delay(Duration.millis(Math.max(millis(config.pollInterval), 1000))),
      Effect.forever,
      Effect.forkScoped
    )

    return {
      // The request clients poll: untraced, and without a generator.
      get: (principal: Principal, executionId: string, options: GetOptions = {}) =>
        options.wait !== undefined && options.unchanged !== undefined
          ? Effect.zipRight(
            waitForChange(principal, executionId, options.wait, options.unchanged),
            Effect.flatMap(visibleExecution(executionId, principal), answer)
          )
          : Effect.flatMap(
            visibleExecution(executionId, principal),
            (record) =>
              options.wait === undefined || isTerminal(record.status)
                ? answer(record)
                : Effect.flatMap(
                  waitForEnd(executionId).pipe(Effect.timeoutOption(options.wait)),
                  (waited) => answer(Option.getOrElse(waited, () => record))
                )
          ),
      getJson: (principal: Principal, executionId: string, options: GetOptions = {}) => {
        if (options.wait !== undefined && options.unchanged !== undefined) {
          return waitForChange(principal, executionId, options.wait, options.unchanged)
        }
        if (!isUuid(executionId)) return Effect.fail(new ExecutionNotFound({ executionId }))
        return Effect.flatMap(
          executionStore.getView(ExecutionId.make(executionId, { disableValidation: true })),
          (view): Effect.Effect<string, ExecutionNotFound | StorageError> => {
            if (Option.isNone(view) || view.value.workspaceId !== principal.workspaceId) {
              return Effect.fail(new ExecutionNotFound({ executionId }))
            }
            if (options.wait === undefined || isTerminal(view.value.status)) {
              return answerJson(view.value)
            }
            const first = view.value
            return Effect.flatMap(
              waitForEnd(executionId).pipe(Effect.timeoutOption(options.wait)),
              (waited) =>
                Option.match(waited, { onNone: () => answerJson(first), onSome: (r) => Effect.succeed(recordJson(r)) })
            )
          }
        )
      },
      await: traced
        ? Effect.fn("Appexec.executions.await")((executionId: string) =>
          Effect.map(waitForEnd(executionId), toExecution)
        )
        // Untraced, a wait is only its registration: many may wait at once.
        : (executionId: string) => Effect.map(waitForEnd(executionId), toExecution)
    }
  })
