/**
 * Lines handed straight to the loggers of the fiber in place, each written as
 * `Effect.logInfo(message)` (or `logDebug`) under `Effect.annotateLogs(annotations)` writes it
 * (the fiber's own annotations, such as the process's name, first), but without the fiber-local
 * annotations that `annotateLogs` sets and restores around every line (the fiber refs copied twice
 * a line). For the lines a busy server writes most: one a request
 * (`@appexec/http`), one an execution transition (the `appexec` command's execution log). On the
 * start path through two API processes on PostgreSQL, the transition lines through `annotateLogs`
 * cost ~33 µs of CPU a start (docs/performance.md).
 */
import { Cause, type Clock, Effect, FiberRef, HashMap, List, LogLevel } from "effect"

/** One line: its message, its annotations, and its level (Info when absent). */
export interface Line {
  readonly message: string
  readonly annotations: HashMap.HashMap<string, unknown>
  readonly level?: LogLevel.LogLevel
}

/** Writes `lines`, each at `levelOf(line)` unless the fiber's minimum level is above it. */
const emit = (
  lines: ReadonlyArray<Line>,
  clock: Clock.Clock,
  levelOf: (line: Line) => LogLevel.LogLevel
): Effect.Effect<void> =>
  Effect.withFiberRuntime<void>((fiber) => {
    const minimum = fiber.getFiberRef(FiberRef.currentMinimumLogLevel)
    const loggers = fiber.getFiberRef(FiberRef.currentLoggers)
    const context = fiber.getFiberRefs()
    const own = fiber.getFiberRef(FiberRef.currentLogAnnotations)
    let date: Date | undefined
    for (const line of lines) {
      const logLevel = levelOf(line)
      if (LogLevel.greaterThan(minimum, logLevel)) continue
      date ??= new Date(clock.unsafeCurrentTimeMillis())
      const options = {
        fiberId: fiber.id(),
        logLevel,
        message: line.message,
        cause: Cause.empty,
        context,
        spans: List.empty(),
        annotations: HashMap.isEmpty(own) ? line.annotations : HashMap.union(own, line.annotations),
        date
      }
      for (const logger of loggers) logger.log(options)
    }
    return Effect.void
  })

const levelOrInfo = (line: Line): LogLevel.LogLevel => line.level ?? LogLevel.Info
const infoLevel = (): LogLevel.LogLevel => LogLevel.Info

/**
 * Writes each of `lines` at its own level (Info when it gives none) to the fiber's loggers, all
 * dated now by `clock`; a line below the fiber's minimum level is left out.
 */
export const write = (lines: ReadonlyArray<Line>, clock: Clock.Clock): Effect.Effect<void> =>
  emit(lines, clock, levelOrInfo)

/**
 * Writes `lines` at level Info (unless the fiber's minimum level is above it) to the fiber's
 * loggers, all dated now by `clock`.
 */
export const info = (lines: ReadonlyArray<Line>, clock: Clock.Clock): Effect.Effect<void> =>
  emit(lines, clock, infoLevel)
