/**
 * What one log line says, whatever its format (docs/logging.md): its message as one string, the
 * failure it reports (`error`, the text of the error and of the errors that caused it, e.g.
 * PostgreSQL's own message; `cause`, the whole cause with its stacks), and the names its fields
 * are written under. The `appexec` command's logger (`StderrLogger`) writes these as JSON or
 * logfmt.
 */
import { Cause, type LogLevel } from "effect"

/** The keys every line writes; an annotation of one of these names is written as `field.<name>`. */
export const reserved: ReadonlySet<string> = new Set(["time", "level", "message"])

/**
 * The key an annotation (or a span) is written under: its name, or `field.<name>` for a name of
 * `reserved`, or for `details`, `error` and `cause` on a line that writes its own (`taken`): a
 * failed execution's line keeps its `error`, a line that reports a failure writes the failure's.
 */
export const fieldName = (name: string, taken?: ReadonlySet<string>): string =>
  reserved.has(name) || taken?.has(name) === true ? `field.${name}` : name

const levelNames: Readonly<Record<string, string>> = {
  TRACE: "trace",
  DEBUG: "debug",
  INFO: "info",
  WARN: "warn",
  ERROR: "error",
  FATAL: "fatal"
}

/** A level as lines write it, lower-case: `trace`, `debug`, `info`, `warn`, `error`, `fatal`. */
export const levelName = (level: LogLevel.LogLevel): string => levelNames[level.label] ?? level.label.toLowerCase()

/** The failure a line reports. */
export interface Failure {
  /** The failure's text on one line: each error's message, then the messages of its causes. */
  readonly error: string
  /** The whole cause as Effect renders it, stacks and `[cause]` chains included (several lines). */
  readonly cause: string
}

/** A line's message taken apart. */
export interface Message {
  /** The parts that are text (strings, numbers, booleans), joined with a space. */
  readonly text: string
  /** The parts that are neither text nor a failure (objects): the line's `details`. */
  readonly details: ReadonlyArray<unknown>
  /** The errors among the parts and the line's cause, if any. */
  readonly failure: Failure | undefined
}

const MAX_CAUSES = 8

/** A value as JSON text, whatever it holds: cycles and bigints do not throw. */
export const jsonText = (value: unknown): string => {
  const seen = new WeakSet<object>()
  const text = JSON.stringify(value, (_, item: unknown) => {
    if (typeof item === "bigint") return item.toString()
    if (item instanceof Error) return errorText(item)
    if (typeof item === "object" && item !== null) {
      if (seen.has(item)) return "[Circular]"
      seen.add(item)
    }
    return item
  })
  return text ?? String(value)
}

/**
 * The text of a failure on one line: an error's message (with its `code` when the message does
 * not say it), then, after `: `, the text of its `cause`; a string as it is; anything else as JSON.
 */
export const errorText = (failure: unknown, depth = 0): string => {
  if (typeof failure === "string") return failure
  if (!(failure instanceof Error)) {
    const message: unknown = typeof failure === "object" && failure !== null
      ? Reflect.get(failure, "message")
      : undefined
    return typeof message === "string" && message !== "" ? message : jsonText(failure)
  }
  let own = failure.message.trim() || failure.name
  const code: unknown = Reflect.get(failure, "code")
  if ((typeof code === "string" || typeof code === "number") && !own.includes(String(code))) own += ` (code ${code})`
  if (depth >= MAX_CAUSES || failure.cause === undefined || failure.cause === null) return own
  const cause = errorText(failure.cause, depth + 1)
  return cause === "" || own.includes(cause) ? own : `${own}: ${cause}`
}

/** The text of each failure and defect of `cause`, or `interrupted` when it holds none. */
const causeErrors = (cause: Cause.Cause<unknown>): Array<string> => {
  const texts = [...Cause.failures(cause), ...Cause.defects(cause)].map((failure) => errorText(failure))
  return texts.length > 0 ? texts : ["interrupted"]
}

const pretty = (cause: Cause.Cause<unknown>) => Cause.pretty(cause, { renderErrorCause: true })

/** What is a text part of a message: joined into the line's message. */
const isText = (part: unknown): part is string | number | boolean | bigint => {
  const type = typeof part
  return type === "string" || type === "number" || type === "boolean" || type === "bigint"
}

/** `message` (one value, or the parts of `Effect.log(a, b, …)`) and the line's `cause` taken apart. */
export const messageOf = (message: unknown, cause: Cause.Cause<unknown>): Message => {
  const parts: ReadonlyArray<unknown> = Array.isArray(message) ? message : [message]
  const words: Array<string> = []
  const details: Array<unknown> = []
  const errors: Array<Error> = []
  let all = cause
  for (const part of parts) {
    if (isText(part)) words.push(String(part))
    else if (part instanceof Error) errors.push(part)
    else if (Cause.isCause(part)) all = Cause.sequential(all, part)
    else details.push(part)
  }
  if (errors.length === 0 && Cause.isEmpty(all)) return { text: words.join(" "), details, failure: undefined }
  const texts = errors.map((error) => errorText(error))
  const rendered = errors.map((error) => pretty(Cause.fail(error)))
  if (!Cause.isEmpty(all)) {
    texts.push(...causeErrors(all))
    rendered.push(pretty(all))
  }
  return { text: words.join(" "), details, failure: { error: texts.join("; "), cause: rendered.join("\n") } }
}
