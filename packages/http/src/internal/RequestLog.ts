/**
 * The request lines of the HTTP app (docs/http.md#request-lines): one a request, at level Debug,
 * or Info when the answer is a 5xx or slow (a probe's, `/healthz` or `/readyz`, always Debug), so that a server at the usual level Info prints only
 * what needs a look. Lines wait a few milliseconds and go out together (one fiber, one logger
 * pass and, with the `appexec` command's logger, one write for the requests of the moment); a
 * 5xx is written at once, beside its error. Below the runtime's minimum level a line is not even
 * queued.
 */
import { LogLines } from "@appexec/core"
import { type Clock, Duration, Effect, FiberRef, FiberRefs, HashMap, LogLevel, Runtime, type Scope } from "effect"

/** The default slow threshold: a request that takes this long is logged at Info. */
export const SLOW_REQUEST: Duration.DurationInput = "1 second"

/** How long request lines gather before they are logged together. */
const REQUEST_LOG_DELAY_MS = 25

/** One request's log line, written after its answer. */
export interface RequestLine {
  readonly requestId: string
  readonly method: string
  readonly path: string
  readonly route: string
  readonly status: number
  readonly ms: number
  /**
   * The client's address: the socket's peer, or, behind `trustProxy` proxies, the address the
   * farthest trusted proxy saw (`RateLimit.clientIp`), so that `--trust-proxy` can be checked.
   */
  readonly client: string
  /** The request's `Prefer` header: a long poll (`wait=N`) is slow only past its N seconds. */
  readonly prefer: string | undefined
}

/** The seconds a long poll asks to be held (`Prefer: wait=N`), 0 for any other request. */
const heldSeconds = (prefer: string | undefined): number => {
  const held = prefer === undefined ? null : /\bwait=(\d{1,2})\b/.exec(prefer)
  return held === null ? 0 : Number(held[1])
}

/**
 * The routes of probes (`/healthz`, `/readyz`): a balancer or an orchestrator asks every few
 * seconds, and a 503 of `/readyz` says what it means by itself (the storage's failure is logged
 * on its own), so their lines are Debug whatever they answer.
 */
const probes: ReadonlySet<string> = new Set(["/healthz", "/readyz"])

/**
 * The level of a request's line: Info for a 5xx or a request slower than `slowMs` (past its
 * hold), else Debug; a probe's always Debug.
 */
export const levelOf = (line: RequestLine, slowMs: number): LogLevel.LogLevel =>
  !probes.has(line.route) &&
    (line.status >= 500 || (line.ms >= slowMs && line.ms >= slowMs + heldSeconds(line.prefer) * 1000))
    ? LogLevel.Info
    : LogLevel.Debug

const toLogLine = (line: RequestLine, level: LogLevel.LogLevel): LogLines.Line => ({
  message: `${line.method} ${line.path} ${line.status} ${line.ms}ms`,
  annotations: HashMap.make(
    ["requestId", line.requestId],
    ["method", line.method],
    ["route", line.route],
    ["status", line.status],
    ["ms", line.ms],
    ["client", line.client]
  ),
  level
})

/** Writes request lines; what is queued goes out with the scope. */
export interface RequestLog {
  /** Logs the line of one answered request: at once for a 5xx (the effect writes it), else soon after. */
  readonly record: (line: RequestLine) => Effect.Effect<void>
}

/** The request log on the current runtime (its loggers and minimum level), slow from `slowRequest`. */
export const make = (
  slowRequest: Duration.DurationInput = SLOW_REQUEST
): Effect.Effect<RequestLog, never, Scope.Scope> =>
  Effect.gen(function*() {
    const runtime = yield* Effect.runtime<never>()
    const clock: Clock.Clock = yield* Effect.clock
    const slowMs = Duration.toMillis(slowRequest)
    const debugLogged = !LogLevel.greaterThan(
      FiberRefs.getOrDefault(runtime.fiberRefs, FiberRef.currentMinimumLogLevel),
      LogLevel.Debug
    )

    let pending: Array<LogLines.Line> = []
    let flushing: ReturnType<typeof setTimeout> | undefined
    const runLog = Runtime.runFork(runtime)
    const flush = () => {
      flushing = undefined
      const lines = pending
      pending = []
      runLog(LogLines.write(lines, clock))
    }
    yield* Effect.addFinalizer(() =>
      Effect.suspend(() => {
        if (flushing !== undefined) clearTimeout(flushing)
        flushing = undefined
        const lines = pending
        pending = []
        return LogLines.write(lines, clock)
      })
    )

    const record = (line: RequestLine): Effect.Effect<void> => {
      const level = levelOf(line, slowMs)
      if (level !== LogLevel.Debug && line.status >= 500) return LogLines.write([toLogLine(line, level)], clock)
      if (level === LogLevel.Debug && !debugLogged) return Effect.void
      pending.push(toLogLine(line, level))
      if (flushing === undefined) flushing = setTimeout(flush, REQUEST_LOG_DELAY_MS)
      return Effect.void
    }
    return { record }
  })
