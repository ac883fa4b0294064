/**
 * One log line per execution transition (queued, running, completed, failed), from core's
 * `ExecutionEvents`.
 */
import { ExecutionEvents } from "@appexec/core"
import { Effect, Queue } from "effect"

/** Logs transitions until the scope closes. */
export const run = Effect.gen(function*() {
  const events = yield* ExecutionEvents.ExecutionEvents
  const subscription = yield* events.subscribe
  yield* Queue.take(subscription).pipe(
    Effect.flatMap((record) =>
      Effect.logInfo(`execution ${record.executionId} ${record.status}`).pipe(
        Effect.annotateLogs({
          executionId: record.executionId,
          appId: record.appId,
          status: record.status,
          ...(record.errorMessage === null ? {} : { error: record.errorMessage })
        })
      )
    ),
    Effect.forever,
    Effect.forkScoped
  )
})
