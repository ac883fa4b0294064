/**
 * Waiting for an execution. Where the server offers the event stream (docs/api.md#live-executions),
 * the client follows it (`EventStream`); elsewhere it polls (docs/api.md#get-an-execution): read it,
 * and until it is `completed` or `failed`, wait 3 to 5 seconds (jittered, so that many clients do
 * not poll in step) and read it again. Where the server supports long polling
 * (docs/api.md#long-polling), each read after the first is held until the execution changes (up to
 * `hold` seconds), so every status is seen as it comes and the wait ends as soon as the execution
 * does. Only reads are sent: waiting never starts anything again. Time is read from `Clock`.
 */
import type * as Execution from "@appexec/api/Execution"
import type * as Live from "@appexec/api/Live"
import { Duration, Effect, Random, Ref } from "effect"
import { WaitError } from "./ClientError.js"

/** The polling interval: a fixed number of milliseconds, or a range each wait is drawn from. */
export type Interval = number | { readonly minMs: number; readonly maxMs: number }

/** docs/api.md#get-an-execution's recommended interval: 3 to 5 seconds. */
export const DEFAULT_INTERVAL: Interval = { minMs: 3_000, maxMs: 5_000 }

/** Longest hold the client asks of a server that supports long polling, in seconds. */
export const DEFAULT_HOLD_SECONDS = 20

/**
 * One read of a wait: the execution, and whether the next read may follow at once: the server
 * held this one (long polling), or it is the first and the next can be held until a change.
 */
export interface Read {
  readonly execution: Execution.Execution
  readonly held: boolean
}

/** Options of a wait. */
export interface WaitOptions {
  /**
   * Ask the server to hold each read until the execution changes, up to this many seconds
   * (`Prefer: wait=N` with `If-None-Match`, 1–60; default 20). A server that holds answers as
   * soon as the status or an output changes, and the next read follows at once; one that does
   * not is polled every `interval`. `false` turns long polling off.
   */
  readonly hold?: number | false
  /** Time between two reads (default 3–5 s, jittered). */
  readonly interval?: Interval
  /** Give up after this many milliseconds with a `WaitError` (`timeout`); default: wait as long as it takes. */
  readonly timeout?: number
  /** Give up when this signal aborts, with a `WaitError` (`aborted`). */
  readonly signal?: AbortSignal
  /**
   * Called with every execution read, the last one included: its status, and its outputs as far
   * as they go. May return an Effect, which the wait runs before it goes on.
   */
  readonly onStatus?: (execution: Execution.Execution) => void | Effect.Effect<void>
  /**
   * Follow the execution's event stream where the server offers it (default true): every change
   * is seen as it happens, and `onEvent` hears what its nodes report. A server without the stream,
   * or a stream that cannot be opened or breaks for good, is polled instead. `false` polls.
   */
  readonly live?: boolean
  /**
   * Called with every event of the stream while the wait follows it (never when it polls): the
   * `execution` events (also given to `onStatus`), and the nodes' `progress` and `log` events. May
   * return an Effect, which the wait runs before it goes on.
   */
  readonly onEvent?: (event: Live.LiveEvent) => void | Effect.Effect<void>
}

/** True for `completed` and `failed`, after which an execution never changes (docs/api.md#execution-states). */
export const isTerminal = (status: Execution.ExecutionStatus): boolean => status === "completed" || status === "failed"

/** The wait before the next read: `interval` itself, or a uniform draw from its range. */
export const nextDelay = (interval: Interval = DEFAULT_INTERVAL): Effect.Effect<number> =>
  typeof interval === "number"
    ? Effect.succeed(Math.max(0, interval))
    : Effect.map(Random.next, (r) => Math.round(interval.minMs + (interval.maxMs - interval.minMs) * r))

const whenAborted = (signal: AbortSignal): Effect.Effect<void> =>
  Effect.async<void>((resume) => {
    if (signal.aborted) return resume(Effect.void)
    const onAbort = () => resume(Effect.void)
    signal.addEventListener("abort", onAbort, { once: true })
    return Effect.sync(() => signal.removeEventListener("abort", onAbort))
  })

/**
 * Reports each execution a wait sees: keeps its status (for the `WaitError` of a wait that stops
 * early) and calls `onStatus`.
 */
export type Seen = (execution: Execution.Execution) => Effect.Effect<void>

/**
 * Runs `follow` (a way to wait: the event stream, or polling) until it returns the terminal
 * execution, within the `timeout` and `signal` of `options`: a wait that stops early fails with a
 * `WaitError` that names the last status `follow` reported to its `Seen`.
 */
export const bounded = <E>(
  executionId: string,
  options: WaitOptions,
  follow: (seen: Seen) => Effect.Effect<Execution.Execution, E>
): Effect.Effect<Execution.Execution, E | WaitError> =>
  Effect.gen(function*() {
    const last = yield* Ref.make<Execution.ExecutionStatus | null>(null)
    const stop = (reason: WaitError["reason"]) =>
      Effect.flatMap(Ref.get(last), (lastStatus) => Effect.fail(new WaitError({ reason, executionId, lastStatus })))
    const seen: Seen = (execution) =>
      Effect.zipRight(
        Ref.set(last, execution.status),
        Effect.suspend(() => {
          const after = options.onStatus?.(execution)
          return Effect.isEffect(after) ? after : Effect.void
        })
      )

    let waiting: Effect.Effect<Execution.Execution, E | WaitError> = follow(seen)
    if (options.timeout !== undefined) {
      waiting = Effect.raceFirst(
        waiting,
        Effect.zipRight(Effect.sleep(Duration.millis(options.timeout)), stop("timeout"))
      )
    }
    if (options.signal !== undefined) {
      waiting = Effect.raceFirst(waiting, Effect.zipRight(whenAborted(options.signal), stop("aborted")))
    }
    return yield* waiting
  })

/**
 * Reads until the execution is terminal and returns it, telling `seen` of every read: again at
 * once after a read the server held, else after `options.interval`. A failed read (after the
 * transport's own retries) ends the polling with its error.
 */
export const poll = <E>(
  read: Effect.Effect<Read, E>,
  seen: Seen,
  options: Pick<WaitOptions, "interval"> = {}
): Effect.Effect<Execution.Execution, E> =>
  Effect.gen(function*() {
    while (true) {
      const { execution, held } = yield* read
      yield* seen(execution)
      if (isTerminal(execution.status)) return execution
      // A held read already waited on the server: read again at once.
      if (!held) yield* Effect.sleep(Duration.millis(yield* nextDelay(options.interval)))
    }
  })

/**
 * Polls `read` until the execution it returns is terminal, and returns that execution. A failed
 * read (after the transport's own retries) ends the wait with its error.
 */
export const waitFor = <E>(
  executionId: string,
  read: Effect.Effect<Read, E>,
  options: WaitOptions = {}
): Effect.Effect<Execution.Execution, E | WaitError> =>
  bounded(executionId, options, (seen) => poll(read, seen, options))
