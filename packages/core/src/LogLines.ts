/**
 * Info lines handed straight to the loggers of the fiber in place, each written as
 * `Effect.logInfo(message)` under `Effect.annotateLogs(annotations)` writes it, but without the
 * fiber-local annotations that `annotateLogs` sets and restores around every line (the fiber refs
 * copied twice a line). For the lines a busy server writes most: one a request (`@appexec/http`),
 * one an execution transition (the `appexec` command's execution log). On the start path through
 * two API processes on PostgreSQL, the transition lines through `annotateLogs` cost ~33 µs of CPU a
 * start (docs/performance.md).
 */
import { Cause, type Clock, Effect, FiberRef, type HashMap, List, LogLevel } from "effect"

/** One line: its message and its annotations. */
export interface Line {
  readonly message: string
  readonly annotations: HashMap.HashMap<string, unknown>
}

/**
 * Writes `lines` at level Info (unless the fiber's minimum level is above it) to the fiber's
 * loggers, all dated now by `clock`.
 */
export const info = (lines: ReadonlyArray<Line>, clock: Clock.Clock): Effect.Effect<void> =>
  Effect.withFiberRuntime<void>((fiber) => {
    if (LogLevel.greaterThan(fiber.getFiberRef(FiberRef.currentMinimumLogLevel), LogLevel.Info)) return Effect.void
    const loggers = fiber.getFiberRef(FiberRef.currentLoggers)
    const context = fiber.getFiberRefs()
    const date = new Date(clock.unsafeCurrentTimeMillis())
    for (const line of lines) {
      const options = {
        fiberId: fiber.id(),
        logLevel: LogLevel.Info,
        message: line.message,
        cause: Cause.empty,
        context,
        spans: List.empty(),
        annotations: line.annotations,
        date
      }
      for (const logger of loggers) logger.log(options)
    }
    return Effect.void
  })
