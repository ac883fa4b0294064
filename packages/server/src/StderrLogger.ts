/**
 * The logger of the `appexec` executable: lines of one shape (docs/logging.md), as JSON or logfmt,
 * written to stderr in batches. Each line has `time` (ISO), `level` (lower-case), `message` (one
 * string), then its fields flat (annotations and spans; one named like a key the line writes
 * itself is written as `field.<name>`), `details` for the parts of the message that are neither
 * text nor a failure, and, for a failure, `error` (its text on one line, the driver's message
 * included) and `cause` (the whole cause with its stacks). In logfmt each key appears once. On a terminal the
 * default is `text`, the same line for a person: the time of day, the level, the message, the
 * fields as in logfmt, and a failure's cause on the lines below.
 *
 * A busy server logs one line per request; writing each with its own `console.error` costs a
 * system call per line, so lines are gathered and written together once per event-loop turn
 * (`setImmediate`), and whatever is left is written when the layer closes or the process exits.
 * A line reaches stderr at most one event-loop turn after it was logged; only a process killed
 * with `SIGKILL` can lose the lines of its last turn. Every line is masked by the process's
 * redactor (`Redactor` of `@appexec/core`) before it is formatted: no secret the process
 * resolved, nor the master key, is written in the clear.
 */
import { Redactor } from "@appexec/core"
import { Cause, Effect, List, Logger } from "effect"
import * as LogRecord from "./internal/LogRecord.js"

/** How each line is formatted. */
export type Format = "logfmt" | "json" | "text"

/**
 * The format of `APPEXEC_LOG_FORMAT` (`json`, `logfmt` or `text`); unset or another value: `text`
 * when stderr is a terminal, else `logfmt`.
 */
export const formatOf = (name: string | undefined, terminal: boolean): Format =>
  name === "json" || name === "logfmt" || name === "text" ? name : terminal ? "text" : "logfmt"

type LogOptions = Logger.Logger.Options<unknown>

/** A value a fast line writes as it is: what a request line's fields are. */
const isPlain = (u: unknown): u is string | number | boolean => {
  const type = typeof u
  return type === "string" || type === "number" || type === "boolean"
}

const bare = /^[^\s"=]*$/

/** A logfmt value: bare when it can be (no space, quote or `=`), else a JSON string. */
const logfmtText = (value: string) => (bare.test(value) ? value : JSON.stringify(value))

/** Any value in logfmt: a number or a boolean bare, a string as `logfmtText`, anything else as its JSON text. */
const logfmtValue = (value: unknown) =>
  typeof value === "string"
    ? logfmtText(value)
    : typeof value === "number" || typeof value === "boolean"
    ? String(value)
    : logfmtText(LogRecord.jsonText(value))

/** Any value as a JSON value of the line (cycles and bigints do not throw; what JSON lacks is a string). */
const jsonValue = (value: unknown) =>
  isPlain(value)
    ? JSON.stringify(value)
    : value === undefined || typeof value === "function" || typeof value === "symbol"
    ? JSON.stringify(String(value))
    : LogRecord.jsonText(value)

/** `HH:MM:SS` of `date` in the local time zone, for the `text` format. */
const timeOfDay = (date: Date) =>
  `${String(date.getHours()).padStart(2, "0")}:${String(date.getMinutes()).padStart(2, "0")}:${
    String(date.getSeconds()).padStart(2, "0")
  }`

/** The keys of a line's own that an annotation gives way to, by what the line writes. */
const noneTaken: ReadonlySet<string> = new Set()
const detailsTaken: ReadonlySet<string> = new Set(["details"])
const failureTaken: ReadonlySet<string> = new Set(["error", "cause"])
const allTaken: ReadonlySet<string> = new Set(["details", "error", "cause"])

/** One key (as the format writes it) and its value, after the line's head. */
type Writer = (key: string, value: unknown) => string

/**
 * The logger of `format`. A line whose message is one string, with no cause, no spans and only
 * plain annotations (every request line, most others) is written by a short loop over its fields;
 * any other goes through `LogRecord.messageOf` first. Neither uses Effect's own loggers.
 */
export const formatter = (format: Format): Logger.Logger<unknown, string> => {
  // The ISO text of the last date asked for: the request lines of a moment share one date.
  let lastTime = Number.NaN
  let lastTimestamp = ""
  const timestampOf = (date: Date) => {
    const time = date.getTime()
    if (time !== lastTime) {
      lastTimestamp = date.toISOString()
      lastTime = time
    }
    return lastTimestamp
  }
  // Field keys as the format writes them, kept for the keys seen most.
  const keys = new Map<string, string>()
  const keyOf = (name: string) => {
    let written = keys.get(name)
    if (written === undefined) {
      const field = LogRecord.fieldName(name)
      written = format === "json" ? JSON.stringify(field) : field.replace(/[\s="]/g, "_")
      if (keys.size >= 256) keys.clear()
      keys.set(name, written)
    }
    return written
  }
  const json = format === "json"
  const write: Writer = json
    ? (key, value) => `,${key}:${jsonValue(value)}`
    : (key, value) => ` ${key}=${logfmtValue(value)}`
  const head = (options: LogOptions, message: string) =>
    json
      ? `{"time":"${timestampOf(options.date)}","level":"${LogRecord.levelName(options.logLevel)}","message":${
        JSON.stringify(message)
      }`
      : format === "logfmt"
      ? `time=${timestampOf(options.date)} level=${LogRecord.levelName(options.logLevel)} message=${
        logfmtText(message)
      }`
      : `${timeOfDay(options.date)} ${options.logLevel.label.padEnd(5)} ${message}`
  const end = json ? "}" : ""

  const plainLine = (options: LogOptions): string | undefined => {
    const message = Array.isArray(options.message) && options.message.length === 1
      ? options.message[0] as unknown
      : options.message
    if (typeof message !== "string" || !Cause.isEmptyType(options.cause) || List.isCons(options.spans)) {
      return undefined
    }
    let out = head(options, message)
    for (const [name, value] of options.annotations) {
      if (!isPlain(value)) return undefined
      out += write(keyOf(name), value)
    }
    return out + end
  }

  const generalLine = (options: LogOptions): string => {
    const { details, failure, text } = LogRecord.messageOf(options.message, options.cause)
    let out = head(options, text)
    const taken = failure === undefined
      ? details.length === 0 ? noneTaken : detailsTaken
      : details.length === 0
      ? failureTaken
      : allTaken
    const fieldKey = (name: string) => taken.has(name) ? keyOf(LogRecord.fieldName(name, taken)) : keyOf(name)
    for (const [name, value] of options.annotations) out += write(fieldKey(name), value)
    const now = options.date.getTime()
    for (const span of options.spans) out += write(fieldKey(span.label), `${now - span.startTime}ms`)
    const key = (name: string) => json ? `"${name}"` : name
    if (details.length > 0) out += write(key("details"), details.length === 1 ? details[0] : details)
    if (failure !== undefined) {
      out += write(key("error"), failure.error)
      out += format === "text" ? `\n${failure.cause.replace(/^/gm, "    ")}` : write(key("cause"), failure.cause)
    }
    return out + end
  }

  return Logger.make((options) => plainLine(options) ?? generalLine(options))
}

/** Replaces the default logger with the batched, masked stderr logger for the layer's lifetime. */
export const layer = (format: Format) =>
  Logger.replaceScoped(
    Logger.defaultLogger,
    Effect.gen(function*() {
      const redactor = yield* Redactor.Redactor
      const lines: Array<string> = []
      let scheduled = false
      const flush = () => {
        scheduled = false
        if (lines.length === 0) return
        const text = `${lines.join("\n")}\n`
        lines.length = 0
        process.stderr.write(text)
      }
      yield* Effect.acquireRelease(
        Effect.sync(() => process.on("exit", flush)),
        () =>
          Effect.sync(() => {
            process.off("exit", flush)
            flush()
          })
      )
      return redactor.logger(Logger.map(formatter(format), (line) => {
        lines.push(line)
        if (!scheduled) {
          scheduled = true
          setImmediate(flush)
        }
      }))
    })
  )

/**
 * Completes once the lines logged so far have been written: the batch of a turn is written by a
 * `setImmediate` scheduled with its first line, which runs before this one. For output on stdout
 * that a person reads after the log lines before it (`serve`'s first key).
 */
export const linesWritten: Effect.Effect<void> = Effect.async<void>((resume) => {
  const turn = setImmediate(() => resume(Effect.void))
  return Effect.sync(() => clearImmediate(turn))
})
