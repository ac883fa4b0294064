/**
 * What one run's nodes report (docs/api.md#live-executions), on its way to the store: progress
 * and log lines are kept in memory and written together, at most once per `reportInterval` for
 * the execution. A report after a quiet spell is written at once (so a client sees it within a
 * round trip); the ones that follow within the interval wait for its end, progress coalesced to
 * the newest per node. A write wakes this process's streams of the execution and announces it
 * to other processes on the storage.
 *
 * Every report is stamped with its event id when it is written: the version of the execution's
 * view at that moment, the run's attempt, and its number in the attempt (`eventId`). The run
 * saves the execution through `saving`, which writes what is pending first and stamps later
 * reports with the new version, so that reports and snapshots interleave in id order.
 *
 * Every message is masked by the `Redactor` before it is cut to its length and kept: a secret a
 * node's log line or progress message holds is never written.
 *
 * Reports never fail the run: a write that fails is logged and its reports are dropped.
 */
import type { ExecutionId } from "@appexec/api/Ids"
import type { LogLevel } from "@appexec/api/Live"
import { Effect, type Scope } from "effect"
import { AppexecConfig, millis } from "../../AppexecConfig.js"
import { ExecutionEvents } from "../../ExecutionEvents.js"
import {
  ATTEMPT_SPAN,
  eventId,
  ExecutionReports,
  MESSAGE_LENGTH,
  type Report,
  type StoredReport
} from "../../ExecutionReports.js"
import type { RunContext } from "../../NodeType.js"
import { Redactor } from "../../Redactor.js"

/** A message cut to `MESSAGE_LENGTH` (after masking: a secret cut in two would no longer be found). */
const bounded = (message: string): string =>
  message.length <= MESSAGE_LENGTH ? message : `${message.slice(0, MESSAGE_LENGTH - 1)}…`

/** The reports of one run. */
export interface Reporter {
  /** The `progress` and `log` of the node context of `nodeId`. */
  readonly reportsOf: (nodeId: string) => Pick<RunContext, "progress" | "log">
  /**
   * `save` (a save of the execution that takes its view to `version`), after what is pending is
   * written, and with no write of reports beside it: the reports made before the save have ids
   * below the new snapshot's, the ones after it above.
   */
  readonly saving: <A, E, R>(save: Effect.Effect<A, E, R>, version: number) => Effect.Effect<A, E, R>
}

/** Who a reporter reports for. */
export interface ReporterOptions {
  readonly executionId: ExecutionId
  readonly attempt: number
  /** The version of the execution's view when the reporter is made. */
  readonly version: number
}

/**
 * The maker of reporters, made once per worker: a run makes its reporter only when a node first
 * reports, so a run that reports nothing costs nothing. Delayed writes run in the worker's scope.
 */
export const factory: Effect.Effect<
  (options: ReporterOptions) => Reporter,
  never,
  AppexecConfig | ExecutionReports | ExecutionEvents | Scope.Scope
> = Effect.gen(function*() {
  const config = yield* AppexecConfig
  const store = yield* ExecutionReports
  const events = yield* ExecutionEvents
  const scope = yield* Effect.scope
  const redactor = yield* Redactor
  const interval = millis(config.reportInterval)
  return (options: ReporterOptions): Reporter => {
    const { executionId, attempt } = options
    let version = options.version
    /** Reports numbered so far in this attempt. */
    let numbered = 0
    /** Pending progress, newest per node, and pending log lines, in order. */
    const progress = new Map<string, Report>()
    let lines: Array<Report> = []
    /** The newest fraction per node: progress never goes back. */
    const highest = new Map<string, number>()
    /** When the last write began (epoch ms); a write is due at `lastWrite + interval`. */
    let lastWrite = Number.NEGATIVE_INFINITY
    let scheduled = false
    const lock = Effect.unsafeMakeSemaphore(1)
    const now = Effect.clockWith((clock) => clock.currentTimeMillis)

    /** Writes what is pending (under the lock). */
    const writePending = Effect.suspend(() => {
      if (progress.size === 0 && lines.length === 0) return Effect.void
      const pending: Array<Report> = [...lines, ...progress.values()].sort((a, b) => a.at - b.at)
      progress.clear()
      lines = []
      const reports: Array<StoredReport> = []
      for (const report of pending) {
        // An attempt numbers at most ATTEMPT_SPAN - 1 reports: the rest are dropped.
        if (numbered >= ATTEMPT_SPAN - 1) break
        numbered += 1
        reports.push({ id: eventId(version, attempt, numbered), report })
      }
      if (reports.length === 0) return Effect.void
      return Effect.flatMap(now, (at) => {
        lastWrite = at
        return store.append(executionId, reports).pipe(
          Effect.zipRight(events.changed(executionId)),
          Effect.zipRight(store.announce(executionId)),
          Effect.catchAll((error) =>
            Effect.logWarning(`execution ${executionId}: ${reports.length} report(s) not stored`, error)
          )
        )
      })
    })
    /** Writes what is pending, one write at a time. */
    const write = lock.withPermits(1)(writePending)

    /** Writes at once after a quiet spell, else at the end of the interval (one write pending at a time). */
    const due = Effect.suspend(() => {
      if (scheduled) return Effect.void
      scheduled = true
      return Effect.flatMap(now, (at) => {
        const wait = Math.max(0, lastWrite + interval - at)
        const run = Effect.zipRight(
          Effect.sync(() => {
            scheduled = false
          }),
          write
        )
        return Effect.asVoid(Effect.forkIn(wait === 0 ? run : Effect.delay(run, wait), scope))
      })
    })

    const reportsOf = (nodeId: string): Pick<RunContext, "progress" | "log"> => ({
      progress: (fraction, message) =>
        Effect.flatMap(now, (at) => {
          const clamped = Number.isFinite(fraction) ? Math.min(1, Math.max(0, fraction)) : 0
          const raised = Math.max(clamped, highest.get(nodeId) ?? 0)
          highest.set(nodeId, raised)
          progress.set(nodeId, {
            _tag: "Progress",
            at,
            nodeId,
            fraction: raised,
            message: message === undefined ? null : bounded(redactor.text(message))
          })
          return due
        }),
      log: (message, level: LogLevel = "info") =>
        Effect.flatMap(now, (at) => {
          lines.push({ _tag: "Log", at, nodeId, level, message: bounded(redactor.text(message)) })
          return due
        })
    })

    return {
      reportsOf,
      saving: (save, next) =>
        lock.withPermits(1)(
          Effect.zipRight(
            writePending,
            Effect.tap(
              save,
              () =>
                Effect.sync(() => {
                  version = next
                })
            )
          )
        )
    }
  }
})
