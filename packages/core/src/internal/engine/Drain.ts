/**
 * The drain of a stopping worker (docs/operations.md#stopping): it waits up to `drainTimeout` for
 * the runs under way, saying once a second how many it waits for, which (app and execution), and
 * how long it has left, and stops waiting at once when the instance is hurried
 * (`Shutdown.unsafeHurry`). The worker then interrupts what still runs and hands it back.
 */
import { Duration, Effect, Fiber } from "effect"
import { Shutdown } from "../../Shutdown.js"
import { AppCatalog } from "../facade/AppCatalog.js"
import type { Run } from "./Runs.js"

/** Most runs a countdown line names; the others are counted. */
const NAMED = 5

/** What a drain waits for. */
export interface Options {
  /** Completes when no run is under way. */
  readonly awaitEmpty: Effect.Effect<void>
  /** How many runs are under way now. */
  readonly size: Effect.Effect<number>
  /** The runs under way now, as the worker's registry (`Runs`) has them. */
  readonly runs: () => Iterable<Run>
  /** The longest the drain waits. */
  readonly timeout: Duration.Duration
}

/** `app name (execution id)` of a run, or its execution id when its workflow cannot be loaded. */
const describe = (catalog: AppCatalog["Type"], run: Run) =>
  catalog.load(run.claim.execution.workflowId).pipe(
    Effect.map(({ app }) => `${app.definition.name} (${run.executionId})`),
    Effect.orElseSucceed(() => run.executionId)
  )

/** The countdown line: how many runs, which, and the seconds left. */
const line = (catalog: AppCatalog["Type"], options: Options, secondsLeft: number) =>
  Effect.gen(function*() {
    const runs = [...options.runs()]
    const count = Math.max(yield* options.size, runs.length)
    const named = yield* Effect.forEach(runs.slice(0, NAMED), (run) => describe(catalog, run))
    const more = count - named.length
    const which = named.length === 0 ? "" : `: ${named.join(", ")}${more > 0 ? ` and ${more} more` : ""}`
    return `worker stopping: waiting for ${count} running execution${
      count === 1 ? "" : "s"
    }${which}; ${secondsLeft} s left, then ${
      count === 1 ? "it is" : "they are"
    } handed back to run again on the next start`
  })

/**
 * Waits for the runs under way to end, at most `timeout`, with a countdown line each second; ends
 * at once when hurried. Answers whether runs are still under way.
 */
export const drain = (options: Options) =>
  Effect.gen(function*() {
    const catalog = yield* AppCatalog
    const shutdown = yield* Shutdown
    const timeoutMs = Duration.toMillis(options.timeout)
    const countdown = Effect.gen(function*() {
      for (let elapsed = 0; elapsed < timeoutMs; elapsed += 1000) {
        yield* Effect.logInfo(yield* line(catalog, options, Math.ceil((timeoutMs - elapsed) / 1000)))
        yield* Effect.sleep(Duration.millis(Math.min(1000, timeoutMs - elapsed)))
      }
      return yield* Effect.never
    })
    const waiting = Effect.raceAll([
      Effect.as(options.awaitEmpty, "ended" as const),
      Effect.as(shutdown.hurried, "hurried" as const),
      Effect.as(Effect.sleep(options.timeout), "timed out" as const),
      countdown
    ])
    // Interruptible in a fiber of its own: the worker stops in a finalizer (uninterruptible: a
    // race there could not interrupt its losers) of a fiber that may be interrupted already (a
    // stop signal interrupts the command, whose finalizers then run: an interruptible wait there
    // would end at once). Only the drain's own ends end it.
    const ended = yield* Effect.flatMap(Effect.forkDaemon(Effect.interruptible(waiting)), Fiber.join)
    const left = yield* options.size
    if (left > 0) {
      yield* Effect.logInfo(
        `worker stopping ${
          ended === "hurried" ? "at once" : `after ${Duration.format(options.timeout)}`
        }: handing back ${left} running execution${left === 1 ? "" : "s"} to run again on the next start`
      )
    }
    return left > 0
  })
