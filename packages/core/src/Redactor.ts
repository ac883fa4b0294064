/**
 * The one redactor (docs/secrets.md#masking): every secret value appexec resolves is registered
 * with it, and it masks that value, and the texts it commonly travels in (`SecretEncodings`:
 * URL-encoded, JSON-escaped, base64 and base64url at any alignment, a `Basic` credential's
 * parts), as `[secret]` before anything leaves: log lines (every logger of an instance and of the
 * `appexec` command passes through `logger`), node outputs and failure messages (the workflow
 * runner), the execution's log and progress (the reporter), webhook bodies (the dispatcher).
 * Stored rows, event streams and `/logs` are made of those, masked before they were written.
 * Nodes do nothing: the store's `resolve` (`SecretStore`) registers what it reads, node settings'
 * secrets are registered by the header helper of `@appexec/nodes`, the master keys at start.
 *
 * Registration is process-wide: `Redactor` is a `Context.Reference` whose default is one
 * registry for the whole process, so a value resolved in any run stays masked in every later
 * line, output and body of the process, whichever instance or logger writes it (a test may
 * provide a fresh one, `make()`). The registry keeps the most recent `MAX_VALUES` values.
 * Masking costs nothing while nothing is registered (no scan); then one pass of one regular
 * expression, the alternation of every pattern (longest first), rebuilt when a value is added.
 */
import { Cause, Context, Effect, FiberRef, HashMap, HashSet, Layer, Logger, Redacted } from "effect"
import { basicCredentials, byteEncodingsOf, encodingsOf } from "./internal/crypto/SecretEncodings.js"

/** What a masked value reads as. */
export const MASK = "[secret]"

/**
 * The shortest value registered (not counting white space around it): shorter ones are no
 * credential, and masking them would garble ordinary text.
 */
export const MIN_LENGTH = 8

/** The most values kept; registering one more forgets the one registered longest ago. */
export const MAX_VALUES = 1024

/** The most characters of patterns kept, all values together; the oldest values are forgotten past it. */
export const MAX_PATTERN_CHARS = 4 * 1024 * 1024

/** A redactor: what it knows, and what it masks. */
export interface Service {
  /**
   * Registers a secret value: from now on it and its encodings are masked. A value shorter than
   * `MIN_LENGTH` is not registered; one registered already is kept as the most recent.
   */
  readonly register: (value: string | Redacted.Redacted<string>) => void
  /** Registers key bytes (a master key): their base64, base64url and hex texts. */
  readonly registerBytes: (bytes: Uint8Array | Redacted.Redacted<Uint8Array>) => void
  /** Whether anything is registered: while not, every mask answers its input without a scan. */
  readonly active: () => boolean
  /** `text` with every registered value, in any of its encodings, replaced by `MASK`. */
  readonly text: (text: string) => string
  /** `value` with every string in it masked: strings, arrays, plain objects and errors (others as they are). */
  readonly value: (value: unknown) => unknown
  /** `logger` with every line masked (message, cause, annotations) before it sees it; a masking logger as it is. */
  readonly logger: <Output>(logger: Logger.Logger<unknown, Output>) => Logger.Logger<unknown, Output>
}

const special = /[.*+?^${}()|[\]\\]/g

/** The deepest nesting of a logged value that is masked; deeper parts are left out. */
const MAX_DEPTH = 8

/** A fresh redactor, with nothing registered. */
export const make = (): Service => {
  /** Registered values, oldest first, each with its patterns (and those of the credential it stands for). */
  const values = new Map<string, ReadonlyArray<string>>()
  let chars = 0
  /** The alternation of every pattern; undefined while nothing is registered. */
  let pattern: RegExp | undefined
  let stale = false
  const masking = new WeakSet<object>()

  const rebuild = () => {
    stale = false
    const all = new Set<string>()
    for (const patterns of values.values()) for (const p of patterns) all.add(p)
    pattern = all.size === 0
      ? undefined
      : new RegExp([...all].sort((a, b) => b.length - a.length).map((p) => p.replace(special, "\\$&")).join("|"), "g")
  }

  /** Registers `value`, with the parts of the credential it stands for (`basicCredentials`). */
  const add = (value: string) => {
    if (value.trim().length < MIN_LENGTH) return
    const known = values.get(value)
    if (known !== undefined) {
      // The most recent again: the last to be forgotten.
      values.delete(value)
      values.set(value, known)
      return
    }
    const patterns = [value, ...basicCredentials(value)]
      .filter((v) => v.trim().length >= MIN_LENGTH)
      .flatMap(encodingsOf)
      .filter((p) => p.length >= MIN_LENGTH)
    values.set(value, patterns)
    chars += patterns.reduce((n, p) => n + p.length, 0)
    for (const [oldest, its] of values) {
      if ((values.size <= MAX_VALUES && chars <= MAX_PATTERN_CHARS) || oldest === value) break
      values.delete(oldest)
      chars -= its.reduce((n, p) => n + p.length, 0)
    }
    stale = true
  }

  const register = (secret: string | Redacted.Redacted<string>) =>
    add(Redacted.isRedacted(secret) ? Redacted.value(secret) : secret)

  const text = (input: string): string => {
    if (stale) rebuild()
    return pattern === undefined ? input : input.replace(pattern, MASK)
  }

  const active = () => stale || pattern !== undefined

  const errorOf = (error: Error, depth: number): Error => {
    const message = text(error.message)
    const stack = error.stack === undefined ? undefined : text(error.stack)
    const cause = "cause" in error ? masked(error.cause, depth + 1) : undefined
    if (message === error.message && stack === error.stack && cause === error.cause) return error
    const copy = new Error(message, cause === undefined ? undefined : { cause })
    copy.name = error.name
    if (stack !== undefined) copy.stack = stack
    return copy
  }

  /** `input` with its strings masked; the same object when nothing in it changed. */
  const masked = (input: unknown, depth: number): unknown => {
    if (typeof input === "string") return text(input)
    if (typeof input !== "object" || input === null || depth > MAX_DEPTH) return input
    if (Array.isArray(input)) {
      const items = input.map((item) => masked(item, depth + 1))
      return items.every((item, i) => item === input[i]) ? input : items
    }
    if (input instanceof Error) return errorOf(input, depth)
    const proto: unknown = Object.getPrototypeOf(input)
    if (proto !== Object.prototype && proto !== null) return input
    let changed = false
    const entries = Object.entries(input).map(([key, item]) => {
      const after = masked(item, depth + 1)
      if (after !== item) changed = true
      return [key, after] as const
    })
    return changed ? Object.fromEntries(entries) : input
  }

  /** A cause whose rendering holds a secret, as one defect whose text is that rendering masked. */
  const causeOf = (cause: Cause.Cause<unknown>): Cause.Cause<unknown> => {
    if (Cause.isEmpty(cause)) return cause
    const rendered = Cause.pretty(cause, { renderErrorCause: true })
    const clean = text(rendered)
    if (clean === rendered) return cause
    const error = new Error(clean.startsWith("Error: ") ? clean.slice(7) : clean)
    error.stack = ""
    return Cause.die(error)
  }

  /** Annotations masked; the same map when nothing in it changed. */
  const annotationsOf = (annotations: HashMap.HashMap<string, unknown>) => {
    let out = annotations
    for (const [key, item] of annotations) {
      const after = masked(item, 0)
      if (after !== item) out = HashMap.set(out, key, after)
    }
    return out
  }

  const logger = <Output>(inner: Logger.Logger<unknown, Output>): Logger.Logger<unknown, Output> => {
    if (masking.has(inner)) return inner
    const outer = Logger.make<unknown, Output>((options) => {
      if (!active()) return inner.log(options)
      return inner.log({
        ...options,
        message: masked(options.message, 0),
        cause: causeOf(options.cause),
        annotations: annotationsOf(options.annotations)
      })
    })
    masking.add(outer)
    return outer
  }

  return {
    register,
    registerBytes: (bytes) => {
      for (const encoded of byteEncodingsOf(Redacted.isRedacted(bytes) ? Redacted.value(bytes) : bytes)) add(encoded)
    },
    active,
    text,
    value: (input) => masked(input, 0),
    logger
  }
}

/** The redactor in force: by default one for the whole process. */
export class Redactor extends Context.Reference<Redactor>()("@appexec/core/Redactor", { defaultValue: make }) {}

/** Registers `value` with the redactor in force (see `Service.register`). */
export const register = (value: string | Redacted.Redacted<string>): Effect.Effect<void> =>
  Effect.map(Redactor, (redactor) => redactor.register(value))

/** `text` masked by the redactor in force. */
export const text = (input: string): Effect.Effect<string> => Effect.map(Redactor, (redactor) => redactor.text(input))

/**
 * Every logger of the fibers the layer is provided to (and of the layers built after it) masked by
 * the redactor in force, for the layer's lifetime: the host's loggers included.
 */
export const layerLoggers: Layer.Layer<never> = Layer.scopedDiscard(
  Effect.flatMap(
    Redactor,
    (redactor) =>
      Effect.locallyScopedWith(
        FiberRef.currentLoggers,
        HashSet.map((logger: Logger.Logger<unknown, unknown>) => redactor.logger(logger))
      )
  )
)
