/**
 * Following one execution to its end on the command line, for `appexec run` and
 * `appexec executions watch`: what it hears (statuses, the nodes' progress and log lines, the
 * command's own notes) goes to `LiveDisplay` and is written on stderr — redrawn in place every
 * second on a terminal, plain lines elsewhere — and at the end the status and time go to stderr
 * and every output to stdout. A failed execution is the command's `RunFailed`. When the command
 * is stopped (Ctrl-C) while it follows, it says how to follow the execution again.
 */
import type { Execution } from "@appexec/api"
import { type EventStream, Outputs } from "@appexec/client"
import { Clock, Console, Effect, Ref, Schema, type Scope, SynchronizedRef } from "effect"
import * as LiveDisplay from "./LiveDisplay.js"

/** The execution ended `failed`; the message is its `errorMessage`. */
export class RunFailed extends Schema.TaggedError<RunFailed>()("RunFailed", {
  executionId: Schema.String,
  message: Schema.String
}) {}

/** The command that follows an execution again: `appexec executions watch ID`. */
export const watchCommandOf = (executionId: string): string => `appexec executions watch ${executionId}`

/** What the command says when it stops following an execution that goes on. */
export const stoppedMessage = (executionId: string): string =>
  `Stopped following execution ${executionId}; it goes on. Follow it again with: ${watchCommandOf(executionId)}`

/** How the display is written. */
export interface FollowOptions {
  /** Redraw in place with ANSI cursor moves (default: when stderr is a terminal). */
  readonly live?: boolean | undefined
}

/** One execution being followed. */
export interface Follower {
  /** Tells the display of a status read (the wait's `onStatus`). */
  readonly onStatus: (execution: Execution.Execution) => Effect.Effect<void>
  /** Tells the display of a live event (the wait's `onEvent`). */
  readonly onEvent: (event: EventStream.LiveEvent) => Effect.Effect<void>
  /** The execution now followed: `following` says so on stderr, and a stop from now on names it. */
  readonly following: (executionId: string, note: string) => Effect.Effect<void>
  /**
   * Ends the display and prints the end: `completed in 12s (execution ID)` on stderr, one line
   * per output on stdout; a failed execution fails with `RunFailed`.
   */
  readonly finish: (done: Execution.Execution) => Effect.Effect<void, RunFailed>
  /** Runs `wait` as this follower's: a stop (interruption) while it runs says how to follow again. */
  readonly around: <A, E, R>(wait: Effect.Effect<A, E, R>) => Effect.Effect<A, E, R>
}

/** A follower whose display lives as long as the scope (on a terminal, its ticker too). */
export const make = (options: FollowOptions = {}): Effect.Effect<Follower, never, Scope.Scope> =>
  Effect.gen(function*() {
    const tty = options.live ?? process.stderr.isTTY === true
    // A terminal that does not tell its width (0, as some pseudo-terminals do) is taken as 80 columns.
    const columns = process.stderr.columns ?? 0
    const mode: LiveDisplay.Mode = { tty, columns: columns > 0 ? columns : 80 }
    const startedAt = yield* Clock.currentTimeMillis
    const display = yield* SynchronizedRef.make(LiveDisplay.initial)
    const followed = yield* Ref.make<string | undefined>(undefined)
    const ended = yield* Ref.make(false)

    /** Tells the display, and writes what it prints (in a pipe, line by line through the console). */
    const show = (event: LiveDisplay.Event) =>
      SynchronizedRef.updateEffect(display, (state) =>
        Effect.gen(function*() {
          if (yield* Ref.get(ended)) return state
          const elapsed = (yield* Clock.currentTimeMillis) - startedAt
          const [next, text] = LiveDisplay.step(mode, state, event, elapsed)
          if (tty) yield* Effect.sync(() => process.stderr.write(text))
          else yield* Effect.forEach(text.split("\n").slice(0, -1), (line) => Console.error(line))
          return next
        }))
    if (tty) yield* Effect.forkScoped(Effect.forever(Effect.zipRight(show({ _tag: "Tick" }), Effect.sleep("1 second"))))

    const end = SynchronizedRef.updateEffect(display, (state) => Effect.as(Ref.set(ended, true), state))

    return {
      onStatus: (execution) => show({ _tag: "Status", execution }),
      onEvent: (event) =>
        event.event === "progress"
          ? show({ _tag: "Progress", progress: event.data })
          : event.event === "log"
          ? show({ _tag: "Log", line: event.data })
          : Effect.void,
      following: (executionId, note) =>
        Effect.zipRight(Ref.set(followed, executionId), show({ _tag: "Note", text: note })),
      finish: (done) =>
        Effect.gen(function*() {
          yield* end
          const elapsed = (yield* Clock.currentTimeMillis) - startedAt
          yield* Console.error(
            `${done.status} in ${LiveDisplay.formatElapsed(elapsed)} (execution ${done.executionId})`
          )
          for (const view of Outputs.all(done)) yield* Console.log(Outputs.describe(view))
          if (done.status === "failed") {
            return yield* new RunFailed({
              executionId: done.executionId,
              message: done.errorMessage ?? "The execution failed."
            })
          }
        }),
      around: (wait) =>
        Effect.onInterrupt(wait, () =>
          Effect.flatMap(Ref.get(followed), (executionId) =>
            executionId === undefined
              ? Effect.void
              : Effect.zipRight(end, Console.error(stoppedMessage(executionId)))))
    } satisfies Follower
  })
