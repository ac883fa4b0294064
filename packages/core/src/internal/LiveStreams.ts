/**
 * The live events of executions (docs/api.md#live-executions): one execution's stream of
 * snapshots and reports, and its kept log.
 *
 * A stream reads the store, never a process's memory: the execution's view (its snapshot, sent
 * when its version grew: `ExecutionRecord.versionOf`) and the reports stored after the last event
 * sent (`ExecutionReports.after`). It reads again at each change of the execution this process
 * hears of: its own worker's saves and report writes, other processes' announcements
 * (`ExecutionReports.announced`), and the look at the store that `Waits` makes for executions
 * other processes run. So a stream is the same in every process, and resuming one (with the id
 * of the last event seen) misses nothing and repeats nothing, whichever process serves it.
 */
import type { Authentication } from "@appexec/api"
import { ExecutionId } from "@appexec/api/Ids"
import type { EventName, LogLine } from "@appexec/api/Live"
import { Chunk, Effect, Option, Stream } from "effect"
import { ExecutionNotFound, type StorageError } from "../Errors.js"
import { type Change, ExecutionEvents } from "../ExecutionEvents.js"
import { isTerminal } from "../ExecutionLifecycle.js"
import { executionJson, type ExecutionView, viewVersion } from "../ExecutionRecord.js"
import {
  ExecutionReports,
  LOG_BYTES,
  LOG_LINES,
  type Report,
  snapshotId,
  type StoredReport,
  VERSION_SPAN,
  versionOf
} from "../ExecutionReports.js"
import { ExecutionStore } from "../ExecutionStore.js"
import { isUuid } from "./Visibility.js"

type Principal = Authentication.Principal

/**
 * One event of an execution's stream, ready for the wire: its SSE `event` name, its `id` (a
 * decimal integer, increasing along the stream), and its `data` as JSON text (for `execution`,
 * exactly the JSON of the poll answer).
 */
export interface LiveEvent {
  readonly event: EventName
  readonly id: string
  readonly data: string
}

const iso = (ms: number) => new Date(ms).toISOString()

/** The `data` JSON of a report's event. */
const reportData = (report: Report): string =>
  report._tag === "Progress"
    ? JSON.stringify({ nodeId: report.nodeId, fraction: report.fraction, message: report.message })
    : JSON.stringify({ at: iso(report.at), level: report.level, nodeId: report.nodeId, message: report.message })

const reportEvent = (stored: StoredReport): LiveEvent => ({
  event: stored.report._tag === "Progress" ? "progress" : "log",
  id: String(stored.id),
  data: reportData(stored.report)
})

/** A `Last-Event-ID` as an event id: a decimal integer, else none (the stream starts afresh). */
const parseEventId = (text: string | undefined): Option.Option<number> => {
  if (text === undefined || !/^\d{1,16}$/.test(text.trim())) return Option.none()
  const id = Number(text.trim())
  return Number.isSafeInteger(id) ? Option.some(id) : Option.none()
}

/** Where a stream is: the last id sent, and the version of the last snapshot sent (none yet). */
interface Position {
  readonly lastId: number
  readonly sentVersion: number | undefined
}

/** The streams and log reads, over the store. */
export const make = Effect.gen(function*() {
  const store = yield* ExecutionStore
  const reports = yield* ExecutionReports
  const events = yield* ExecutionEvents

  // What other processes announce wakes the streams of this one.
  yield* reports.announced.pipe(
    Stream.runForEach((executionId) => events.changed(executionId)),
    Effect.catchAllCause((cause) => Effect.logWarning("announcements of other processes stopped", cause)),
    Effect.forkScoped
  )

  /** The view of an execution of the principal's workspace. */
  const visibleView = (
    principal: Principal,
    executionId: string
  ): Effect.Effect<ExecutionView, ExecutionNotFound | StorageError> => {
    if (!isUuid(executionId)) return Effect.fail(new ExecutionNotFound({ executionId }))
    return Effect.flatMap(
      store.getView(ExecutionId.make(executionId, { disableValidation: true })),
      (view) =>
        Option.isNone(view) || view.value.workspaceId !== principal.workspaceId
          ? Effect.fail(new ExecutionNotFound({ executionId }))
          : Effect.succeed(view.value)
    )
  }

  /** The snapshot event of a view (with its queue position while queued), with id `id`. */
  const snapshot = (view: ExecutionView, id: number): Effect.Effect<LiveEvent, StorageError> =>
    view.status === "queued"
      ? Effect.map(
        store.queuePosition(ExecutionId.make(view.executionId, { disableValidation: true })),
        (position) => ({ event: "execution", id: String(id), data: executionJson(view, position) })
      )
      : Effect.succeed({ event: "execution", id: String(id), data: executionJson(view) })

  /**
   * One step of a stream: the view and the reports after the position, read in that order (a
   * report stamped with a version the view read does not show yet waits for the next step, after
   * its snapshot), as events in id order, and the position after them.
   */
  const step = (
    principal: Principal,
    executionId: ExecutionId,
    position: Position | undefined
  ): Effect.Effect<
    { readonly events: Array<LiveEvent>; readonly position: Position; readonly ended: boolean },
    ExecutionNotFound | StorageError
  > =>
    Effect.gen(function*() {
      const view = yield* visibleView(principal, executionId)
      const version = viewVersion(view)
      const terminal = isTerminal(view.status)
      const after = yield* reports.after(executionId, position?.lastId ?? 0)
      // A fresh stream, or one resumed from a point no longer kept (or never reached): the
      // snapshot as it is now, with an id above every report kept.
      if (
        position === undefined ||
        (position.sentVersion === undefined &&
          (after.droppedThrough > position.lastId || versionOf(position.lastId) > version))
      ) {
        let lastId = snapshotId(version)
        for (const stored of after.reports) {
          if (stored.id > lastId && stored.id < snapshotId(version + 1)) lastId = stored.id
        }
        return {
          events: [yield* snapshot(view, lastId)],
          position: { lastId, sentVersion: version },
          ended: terminal
        }
      }
      const sentVersion = position.sentVersion ?? versionOf(position.lastId)
      const out: Array<LiveEvent> = []
      let lastId = position.lastId
      const newSnapshot = version > sentVersion
      let snapshotSent = false
      for (const stored of after.reports) {
        // Reports of a version the view does not show yet wait for the next step.
        if (stored.id >= (version + 1) * VERSION_SPAN) break
        if (newSnapshot && !snapshotSent && stored.id >= snapshotId(version)) {
          out.push(yield* snapshot(view, snapshotId(version)))
          snapshotSent = true
        }
        if (stored.id <= lastId) continue
        out.push(reportEvent(stored))
        lastId = stored.id
      }
      if (newSnapshot && !snapshotSent) {
        out.push(yield* snapshot(view, snapshotId(version)))
        lastId = Math.max(lastId, snapshotId(version))
      } else if (snapshotSent) {
        lastId = Math.max(lastId, snapshotId(version))
      }
      return {
        events: out,
        position: { lastId, sentVersion: Math.max(sentVersion, version) },
        // A finished execution's snapshot is sent now or was before: nothing follows it.
        ended: terminal
      }
    })

  const liveEvents = (
    principal: Principal,
    executionId: string,
    options: { readonly lastEventId?: string | undefined } = {}
  ): Effect.Effect<Stream.Stream<LiveEvent, StorageError>, ExecutionNotFound | StorageError> =>
    Effect.map(visibleView(principal, executionId), (found) => {
      const id = ExecutionId.make(found.executionId, { disableValidation: true })
      const resumed = Option.map(
        parseEventId(options.lastEventId),
        (lastId): Position => ({ lastId, sentVersion: undefined })
      )
      // Registered before the first read: a change made while the store is read is not missed.
      const registered = Effect.acquireRelease(
        Effect.sync(() => events.unsafeAwaitChange(id)),
        (watching) => Effect.sync(watching.release)
      )
      interface State {
        readonly position: Position | undefined
        readonly next: Effect.Effect<Change> | undefined
        readonly ended: boolean
      }
      return Stream.unwrapScoped(
        Effect.map(registered, (watching) =>
          Stream.unfoldChunkEffect<State, LiveEvent, StorageError, never>(
            { position: Option.getOrUndefined(resumed), next: undefined, ended: false },
            (state) => {
              if (state.ended) return Effect.succeedNone
              // Each step but the first waits for a change; the wait for the one after it is taken
              // before the step reads.
              const waited: Effect.Effect<Effect.Effect<Change>> = state.next === undefined
                ? Effect.succeed(watching.next)
                : Effect.map(state.next, (change) => change.next)
              return Effect.flatMap(waited, (next) =>
                step(principal, id, state.position).pipe(
                  Effect.map((result) =>
                    Option.some(
                      [
                        Chunk.unsafeFromArray(result.events),
                        { position: result.position, next, ended: result.ended }
                      ] as const
                    )
                  ),
                  // Gone (retention deleted it) while streamed: the stream ends.
                  Effect.catchTag("ExecutionNotFound", () => Effect.succeedNone)
                ))
            }
          ))
      )
    })

  const logs = (
    principal: Principal,
    executionId: string
  ): Effect.Effect<ReadonlyArray<LogLine>, ExecutionNotFound | StorageError> =>
    Effect.flatMap(
      visibleView(principal, executionId),
      (view) =>
        Effect.map(reports.logs(ExecutionId.make(view.executionId, { disableValidation: true })), (kept) => {
          const lines: Array<LogLine> = []
          const first = kept.lines[0]?.report
          if (kept.dropped > 0) {
            lines.push({
              at: new Date(first?.at ?? view.createdAt),
              level: "warn",
              nodeId: null,
              message:
                `${kept.dropped} earlier log line(s) dropped: an execution keeps its last ${LOG_LINES} lines or ${
                  LOG_BYTES / 1024
                } KiB`
            })
          }
          for (const { report } of kept.lines) {
            if (report._tag === "Log") {
              lines.push({
                at: new Date(report.at),
                level: report.level,
                nodeId: report.nodeId,
                message: report.message
              })
            }
          }
          return lines
        })
    )

  return { events: liveEvents, logs }
})
