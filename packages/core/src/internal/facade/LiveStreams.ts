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
 * of the last event seen) misses nothing and repeats nothing, whichever process serves it. The
 * streams of one execution share each read made after a change (`SharedReads`): a change costs
 * one read of the store and one snapshot JSON, whatever the number of streams.
 */
import type { Authentication } from "@appexec/api"
import { ExecutionId } from "@appexec/api/Ids"
import type { EventName, LogLine } from "@appexec/api/Live"
import { Chunk, Effect, Option, Stream } from "effect"
import { ExecutionNotFound, type StorageError } from "../../Errors.js"
import { ExecutionEvents } from "../../ExecutionEvents.js"
import { isTerminal } from "../../ExecutionLifecycle.js"
import { executionJson, type ExecutionView, viewVersion } from "../../ExecutionRecord.js"
import {
  ExecutionReports,
  LOG_BYTES,
  LOG_LINES,
  snapshotId,
  type StoredReport,
  VERSION_SPAN,
  versionOf
} from "../../ExecutionReports.js"
import { ExecutionStore } from "../../ExecutionStore.js"
import * as SharedReads from "./SharedReads.js"
import { isUuid } from "./Visibility.js"
import type * as WaitingFor from "./WaitingFor.js"

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

/** The SSE event of a report, and its `data` JSON. */
const reportEvent = ({ id, report }: StoredReport): LiveEvent => {
  switch (report._tag) {
    case "Progress":
      return {
        event: "progress",
        id: String(id),
        data: JSON.stringify({ nodeId: report.nodeId, fraction: report.fraction, message: report.message })
      }
    case "Log":
      return {
        event: "log",
        id: String(id),
        data: JSON.stringify({
          at: iso(report.at),
          level: report.level,
          nodeId: report.nodeId,
          message: report.message
        })
      }
    case "Preview":
      return {
        event: "preview",
        id: String(id),
        data: JSON.stringify({
          nodeId: report.nodeId,
          url: report.url,
          mediaType: report.mediaType,
          at: iso(report.at)
        })
      }
  }
}

/**
 * One client following one execution, without a fiber, a stream or a deferred of its own: it
 * reads what is new when asked (`next`), and says when there may be something new (`onChange`).
 * What an event stream is made of (`Appexec.executions.follow`).
 */
export interface Follower {
  /**
   * The events made since the last call (the first call: the opening ones), in id order, and
   * whether the stream has ended (after the terminal snapshot, or the execution is gone).
   */
  readonly next: Effect.Effect<{ readonly events: ReadonlyArray<LiveEvent>; readonly ended: boolean }, StorageError>
  /**
   * Calls `callback` once, at the first change of the execution after the last `next` began (at
   * once, before answering, when there was one already); answers the function that cancels it.
   */
  readonly onChange: (callback: () => void) => () => void
  /** Stops following (removes the follower's registration): once, when done. */
  readonly close: Effect.Effect<void>
}

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

/** One step of a stream: the events to send, where it is then, and whether it has ended. */
interface Step {
  readonly events: ReadonlyArray<LiveEvent>
  readonly position: Position
  readonly ended: boolean
}

/** The place of a stream of `workspaceId` at `position`, as a key of the steps shared there. */
const placeOf = (workspaceId: string, position: Position | undefined) =>
  position === undefined ? `${workspaceId}` : `${workspaceId}/${position.lastId}/${position.sentVersion ?? ""}`

/** The streams and log reads, over the store; a queued execution's snapshot says what `waitingFor` gives. */
export const make = (waitingFor: WaitingFor.WaitingForAny) =>
  Effect.gen(function*() {
    const store = yield* ExecutionStore
    const reports = yield* ExecutionReports
    const events = yield* ExecutionEvents

    // What other processes announce wakes the streams of this one.
    yield* reports.announced.pipe(
      Stream.runForEach((executionId) => events.changed(executionId)),
      Effect.catchAllCause((cause) => Effect.logWarning("announcements of other processes stopped", cause)),
      Effect.forkScoped
    )

    /** The view `read` gives, when it is an execution of the principal's workspace. */
    const visibleIn = (
      principal: Principal,
      executionId: string,
      read: Effect.Effect<Option.Option<ExecutionView>, StorageError>
    ): Effect.Effect<ExecutionView, ExecutionNotFound | StorageError> =>
      Effect.flatMap(
        read,
        (view) =>
          Option.isNone(view) || view.value.workspaceId !== principal.workspaceId
            ? Effect.fail(new ExecutionNotFound({ executionId }))
            : Effect.succeed(view.value)
      )

    /** The view of an execution of the principal's workspace. */
    const visibleView = (
      principal: Principal,
      executionId: string
    ): Effect.Effect<ExecutionView, ExecutionNotFound | StorageError> =>
      isUuid(executionId)
        ? visibleIn(principal, executionId, store.getView(ExecutionId.make(executionId, { disableValidation: true })))
        : Effect.fail(new ExecutionNotFound({ executionId }))

    /** The snapshot event of a view (with its queue position while queued), with id `id`. */
    const snapshot = (view: ExecutionView, id: number): Effect.Effect<LiveEvent, StorageError> =>
      view.status === "queued"
        ? Effect.zipWith(
          store.queuePosition(ExecutionId.make(view.executionId, { disableValidation: true })),
          waitingFor(view),
          (position, reason) => ({ event: "execution", id: String(id), data: executionJson(view, position, reason) })
        )
        : Effect.succeed({ event: "execution", id: String(id), data: executionJson(view) })

    // One read per change for all the streams of an execution.
    const watch = yield* SharedReads.make<LiveEvent, Step, ExecutionNotFound | StorageError>({
      view: store.getView,
      after: reports.after,
      snapshot,
      reportEvent
    })

    /**
     * One step of a stream: the view and the reports after the position, read in that order (a
     * report stamped with a version the view read does not show yet waits for the next step, after
     * its snapshot), as events in id order, and the position after them. The reads are `read`'s,
     * shared with the execution's other streams.
     */
    const step = (
      principal: Principal,
      executionId: ExecutionId,
      read: SharedReads.Read<LiveEvent, Step, ExecutionNotFound | StorageError>,
      position: Position | undefined
    ): Effect.Effect<Step, ExecutionNotFound | StorageError> =>
      Effect.gen(function*() {
        const view = yield* visibleIn(principal, executionId, read.view)
        const version = viewVersion(view)
        const terminal = isTerminal(view.status)
        const after = yield* read.after(position?.lastId ?? 0)
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
            events: [yield* read.snapshot(view, lastId)],
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
            out.push(yield* read.snapshot(view, snapshotId(version)))
            snapshotSent = true
          }
          if (stored.id <= lastId) continue
          out.push(read.reportEvent(stored))
          lastId = stored.id
        }
        if (newSnapshot && !snapshotSent) {
          out.push(yield* read.snapshot(view, snapshotId(version)))
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

    const follow = (
      principal: Principal,
      executionId: string,
      options: { readonly lastEventId?: string | undefined } = {}
    ): Effect.Effect<Follower, ExecutionNotFound | StorageError> =>
      Effect.map(visibleView(principal, executionId), (found): Follower => {
        const id = ExecutionId.make(found.executionId, { disableValidation: true })
        let position: Position | undefined = Option.getOrUndefined(
          Option.map(parseEventId(options.lastEventId), (lastId): Position => ({ lastId, sentVersion: undefined }))
        )
        let ended = false
        // Whether the execution may have changed since the last read began; the first read is due.
        let dirty = true
        let waker: (() => void) | undefined
        // Listening from before the first read: a change made while the store is read is not missed.
        const watching = watch(id, () => {
          dirty = true
          const wake = waker
          waker = undefined
          wake?.()
        })
        return {
          next: Effect.suspend(() => {
            dirty = false
            if (ended) return Effect.succeed({ events: [], ended: true })
            const read = watching.read()
            // Every stream at this place makes the same step: made once.
            return read.shared(placeOf(principal.workspaceId, position), () => step(principal, id, read, position))
              .pipe(
                Effect.map((result) => {
                  position = result.position
                  ended = result.ended
                  return { events: result.events, ended }
                }),
                // Gone (retention deleted it) while followed: the stream ends.
                Effect.catchTag("ExecutionNotFound", () => {
                  ended = true
                  return Effect.succeed({ events: [], ended: true })
                })
              )
          }),
          onChange: (callback) => {
            if (dirty) {
              callback()
              return () => {}
            }
            waker = callback
            return () => {
              if (waker === callback) waker = undefined
            }
          },
          close: Effect.sync(watching.close)
        }
      })

    /** The next change of a follower. */
    const changeOf = (follower: Follower) =>
      Effect.async<void>((resume) => {
        const cancel = follower.onChange(() => resume(Effect.void))
        return Effect.sync(cancel)
      })

    const liveEvents = (
      principal: Principal,
      executionId: string,
      options: { readonly lastEventId?: string | undefined } = {}
    ): Effect.Effect<Stream.Stream<LiveEvent, StorageError>, ExecutionNotFound | StorageError> =>
      Effect.map(follow(principal, executionId, options), (follower) =>
        Stream.ensuring(
          Stream.unfoldChunkEffect<boolean, LiveEvent, StorageError, never>(false, (ended) =>
            ended
              ? Effect.succeedNone
              : Effect.zipRight(
                changeOf(follower),
                Effect.map(
                  follower.next,
                  (result) => Option.some([Chunk.unsafeFromArray(result.events), result.ended] as const)
                )
              )),
          follower.close
        ))

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

    return { events: liveEvents, follow, logs }
  })
