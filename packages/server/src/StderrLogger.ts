/**
 * The logger of the `appexec` executable: Effect's logfmt or JSON lines, written to stderr in
 * batches. A busy server logs one line per request; writing each with its own `console.error`
 * costs a system call per line, so lines are gathered and written together once per event-loop
 * turn (`setImmediate`), and whatever is left is written when the layer closes or the process
 * exits. A line reaches stderr at most one event-loop turn after it was logged; only a process
 * killed with `SIGKILL` can lose the lines of its last turn. Every line is masked by the
 * process's redactor (`Redactor` of `@appexec/core`) before it is formatted: no secret the
 * process resolved, nor the master key, is written in the clear.
 */
import { Redactor } from "@appexec/core"
import { Cause, Effect, HashMap, List, Logger } from "effect"

/** How each line is formatted. */
export type Format = "logfmt" | "json"

type LogOptions = Logger.Logger.Options<unknown>

/** A value a fast line writes as it is: what a request line's fields are. */
const isPlain = (u: unknown): u is string | number | boolean => {
  const type = typeof u
  return type === "string" || type === "number" || type === "boolean"
}

/**
 * The line of a log whose message is one string, with no cause, no spans and only plain
 * annotations (every request line, most others), or undefined for any other log. The
 * output is byte for byte Effect's `jsonLogger` / `logfmtLogger` line (tested), written without
 * their general machinery: the JSON without a cycle-guarding replacer, the fiber's name without a
 * set of ids.
 */
const plainLine = (format: Format, options: LogOptions): string | undefined => {
  const { annotations, cause, date, fiberId, logLevel, spans } = options
  const message = Array.isArray(options.message) && options.message.length === 1
    ? options.message[0] as unknown
    : options.message
  if (typeof message !== "string" || !Cause.isEmptyType(cause) || List.isCons(spans) || fiberId._tag !== "Runtime") {
    return undefined
  }
  const fiber = `#${fiberId.id}`
  if (format === "json") {
    const fields: Record<string, string | number | boolean> = {}
    for (const [key, value] of annotations) {
      if (!isPlain(value)) return undefined
      fields[key] = value
    }
    return JSON.stringify({
      message,
      logLevel: logLevel.label,
      timestamp: timestampOf(date),
      annotations: fields,
      spans: {},
      fiberId: fiber
    })
  }
  let out = `timestamp=${timestampOf(date)} level=${logLevel.label} fiber=${fiber} message=${logfmtValue(message)}`
  if (HashMap.size(annotations) > 0) {
    for (const [key, value] of annotations) {
      if (!isPlain(value)) return undefined
      // A number or a boolean is written bare: its text has no space, quote or `=`.
      out += ` ${logfmtKey(key)}=${typeof value === "string" ? logfmtValue(value) : String(value)}`
    }
  }
  return out
}

const textOnly = /^[^\s"=]*$/

/** The ISO text of the last date asked for: the request lines of a moment share one date. */
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

/** Annotation keys as logfmt writes them (spaces, quotes and `=` as `_`), kept for the keys seen most. */
const keys = new Map<string, string>()
const logfmtKey = (key: string) => {
  let written = keys.get(key)
  if (written === undefined) {
    written = key.replace(/[\s="]/g, "_")
    if (keys.size >= 256) keys.clear()
    keys.set(key, written)
  }
  return written
}

/** A logfmt value as Effect's `logfmtLogger` writes it: bare when it can be, else a JSON string. */
const logfmtValue = (value: string) => (textOnly.test(value) ? value : JSON.stringify(value))

/** The logger of `format`, with the fast path for plain lines. */
export const formatter = (format: Format): Logger.Logger<unknown, string> => {
  const general = format === "json" ? Logger.jsonLogger : Logger.logfmtLogger
  return Logger.make((options) => plainLine(format, options) ?? general.log(options))
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
