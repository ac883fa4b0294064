/**
 * One log line per execution transition (queued, running, completed, failed), from core's
 * `ExecutionEvents`, with the execution's id, app and status (and error) as annotations. Written
 * through core's `LogLines` rather than `Effect.annotateLogs`: on a busy API process this is a
 * line per start.
 */
import { ExecutionEvents, type ExecutionRecord, LogLines } from "@appexec/core"
import { Effect, HashMap, Queue } from "effect"

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

/** Logs transitions until the scope closes. */
export const run = Effect.gen(function*() {
  const events = yield* ExecutionEvents.ExecutionEvents
  const subscription = yield* events.subscribe
  const clock = yield* Effect.clock
  yield* Queue.take(subscription).pipe(
    Effect.flatMap((record) => LogLines.info([lineOf(record)], clock)),
    Effect.forever,
    Effect.forkScoped
  )
})
