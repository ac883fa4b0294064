/**
 * appexec's log lines given to the host's logger: any object with `debug`, `info`, `warn` and
 * `error` (the `console`, pino, winston, consola, …). Each line is one call with the message and
 * its fields as one flat object (`requestId`, `executionId`, `status`, …, and `err` for the error
 * a line reports): `logger.info(message, fields)`, or, for pino, whose methods take the fields
 * first, `logger.info(fields, message)`. It replaces Effect's default logger inside the instance
 * (one `Logger.replace`), so nothing of appexec is written to stdout on its own.
 */
import { Cause, type HashMap, Layer, List, Logger, LogLevel } from "effect"

/** A logger of the host: four methods that take a message and fields (or, pino, fields and a message). */
export interface HostLogger {
  debug(...args: ReadonlyArray<unknown>): unknown
  info(...args: ReadonlyArray<unknown>): unknown
  warn(...args: ReadonlyArray<unknown>): unknown
  error(...args: ReadonlyArray<unknown>): unknown
}

/** The least severe lines passed on. */
export type Level = "debug" | "info" | "warn" | "error"

/** Whether the logger takes the fields first: pino's methods do (`logger.info({ id }, "message")`). */
export const takesFieldsFirst = (logger: HostLogger): boolean =>
  typeof Reflect.get(logger, "bindings") === "function" && typeof Reflect.get(logger, "levels") === "object"

/** The host's method of a level. */
const methodOf = (logger: HostLogger, level: LogLevel.LogLevel) => {
  switch (level._tag) {
    case "All":
    case "Trace":
    case "Debug":
      return logger.debug
    case "Info":
      return logger.info
    case "Warning":
      return logger.warn
    default:
      return logger.error
  }
}

/** One line: the message (the string parts of what was logged) and the fields (annotations, `err`, the rest). */
export const lineOf = (
  message: unknown,
  annotations: HashMap.HashMap<string, unknown>,
  cause: Cause.Cause<unknown>
): { readonly message: string; readonly fields: Record<string, unknown> } => {
  const fields: Record<string, unknown> = {}
  for (const [name, value] of annotations) fields[name] = value
  const parts = Array.isArray(message) ? message : [message]
  const words: Array<string> = []
  const rest: Array<unknown> = []
  for (const part of parts) {
    if (typeof part === "string") words.push(part)
    else if (part instanceof Error || Cause.isCause(part)) {
      fields["err"] = Cause.isCause(part)
        ? Cause.squash(part)
        : part
    } else rest.push(part)
  }
  if (rest.length > 0) fields["details"] = rest.length === 1 ? rest[0] : rest
  if (!Cause.isEmpty(cause)) fields["err"] = Cause.squash(cause)
  return { message: words.join(" "), fields }
}

/** An Effect logger that hands each line to `logger`. */
export const make = (logger: HostLogger): Logger.Logger<unknown, void> => {
  const fieldsFirst = takesFieldsFirst(logger)
  return Logger.make(({ annotations, cause, logLevel, message, spans }) => {
    const line = lineOf(message, annotations, cause)
    if (List.isCons(spans)) line.fields["span"] = spans.head.label
    const method = methodOf(logger, logLevel)
    const hasFields = Object.keys(line.fields).length > 0
    if (fieldsFirst) method.call(logger, line.fields, line.message)
    else if (hasFields) method.call(logger, line.message, line.fields)
    else method.call(logger, line.message)
  })
}

const levels: Readonly<Record<Level, LogLevel.LogLevel>> = {
  debug: LogLevel.Debug,
  info: LogLevel.Info,
  warn: LogLevel.Warning,
  error: LogLevel.Error
}

/**
 * The logging of an instance: Effect's default logger replaced by the host's (or by none, when
 * `logger` is `false`), lines below `level` (default `info`) dropped.
 */
export const layer = (logger: HostLogger | false, level: Level = "info"): Layer.Layer<never> =>
  Layer.merge(
    logger === false ? Logger.remove(Logger.defaultLogger) : Logger.replace(Logger.defaultLogger, make(logger)),
    Logger.minimumLogLevel(levels[level])
  )
