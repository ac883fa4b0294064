/**
 * One log line per execution transition (queued, running, completed, failed), from core's
 * `ExecutionEvents`, with the execution's id, app and status (and error) as annotations. Written
 * through core's `LogLines` rather than `Effect.annotateLogs`: on a busy API process this is a
 * line per start.
 */
import { ExecutionEvents, type ExecutionRecord, LogLines } from "@appexec/core"
import { Chunk, Effect, FiberRef, HashMap, LogLevel, Queue } from "effect"

/** The line of a transition. */
const lineOf = (record: ExecutionRecord.ExecutionRecord): LogLines.Line => ({
  message: `execution ${record.executionId} ${record.status}`,
  annotations: record.errorMessage === null
    ? HashMap.make(["executionId", record.executionId], ["appId", record.appId], ["status", record.status])
    : HashMap.make(
      ["executionId", record.executionId],
      ["appId", record.appId],
      ["status", record.status],
      ["error", record.errorMessage]
    )
})

/**
 * Logs transitions until the scope closes, those that came together in one go. Nothing at a level
 * above Info (a worker run at `warning`): no subscription then, and no work per transition.
 */
export const run = Effect.gen(function*() {
  if (LogLevel.greaterThan(yield* FiberRef.get(FiberRef.currentMinimumLogLevel), LogLevel.Info)) return
  const events = yield* ExecutionEvents.ExecutionEvents
  const subscription = yield* events.subscribe
  const clock = yield* Effect.clock
  yield* Queue.takeBetween(subscription, 1, Number.MAX_SAFE_INTEGER).pipe(
    Effect.flatMap((records) => LogLines.info(Chunk.toReadonlyArray(Chunk.map(records, lineOf)), clock)),
    Effect.forever,
    Effect.forkScoped
  )
})
