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
 * A live preview image (`preview`) is stored in the blob store under the execution's prefix (so
 * retention deletes it with the execution) and reported with its media URL, at most once per
 * `PREVIEW_INTERVAL_MS`: a newer one within the interval replaces the pending one, which is
 * written at its end, or before the run's next save, whichever comes first (the last is never
 * lost, and comes before the terminal snapshot). The previous preview's blob is then deleted where
 * the store can delete single keys: the newest is the one kept. An image over `PREVIEW_BYTES`,
 * or a preview of an instance that has no media URLs, is not kept (a debug line says so).
 *
 * Reports never fail the run: a write that fails is logged and its reports are dropped.
 */
import type { ExecutionId } from "@appexec/api/Ids"
import type { LogLevel } from "@appexec/api/Live"
import { Effect, Option, type Scope } from "effect"
import { AppexecConfig, millis } from "../../AppexecConfig.js"
import { BlobStore, executionPrefix } from "../../BlobStore.js"
import { ExecutionEvents } from "../../ExecutionEvents.js"
import {
  ATTEMPT_SPAN,
  eventId,
  ExecutionReports,
  MESSAGE_LENGTH,
  PREVIEW_BYTES,
  PREVIEW_INTERVAL_MS,
  type PreviewMediaType,
  type Report,
  type StoredReport
} from "../../ExecutionReports.js"
import { MediaUrls } from "../../MediaUrls.js"
import type { RunContext } from "../../NodeType.js"
import { Redactor } from "../../Redactor.js"

/** A message cut to `MESSAGE_LENGTH` (after masking: a secret cut in two would no longer be found). */
const bounded = (message: string): string =>
  message.length <= MESSAGE_LENGTH ? message : `${message.slice(0, MESSAGE_LENGTH - 1)}…`

/** What a node context reports: its progress, log lines and live previews. */
export type Reports = Pick<RunContext, "progress" | "log" | "preview">

/** The reports of one run. */
export interface Reporter {
  /** The `progress`, `log` and `preview` of the node context of `nodeId`. */
  readonly reportsOf: (nodeId: string) => Reports
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
  // Previews need somewhere to keep the image and a URL to hand out: an instance without media URLs keeps none.
  const blobs = yield* Effect.serviceOption(BlobStore)
  const urls = yield* Effect.serviceOption(MediaUrls)
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

    /** The preview waiting for its write, the time of the last one written, and its blob. */
    let preview: {
      readonly nodeId: string
      readonly mediaType: PreviewMediaType
      readonly bytes: Uint8Array
      readonly at: number
    } | undefined
    let lastPreview = Number.NEGATIVE_INFINITY
    let previewScheduled = false
    let previewKey: string | undefined
    let previews = 0

    /** Stores the pending preview's image, then its report (numbered under the lock), then deletes the previous image. */
    const writePreview = Effect.suspend(() => {
      const pending = preview
      if (pending === undefined || Option.isNone(blobs) || Option.isNone(urls)) return Effect.void
      preview = undefined
      previews += 1
      const key = `${executionPrefix(executionId)}preview-${attempt}-${previews}.${
        pending.mediaType === "image/png" ? "png" : "jpg"
      }`
      const previous = previewKey
      return Effect.gen(function*() {
        lastPreview = yield* now
        yield* blobs.value.put(key, { contentType: pending.mediaType, bytes: pending.bytes })
        const url = yield* urls.value.urlFor(key)
        const report: Report = {
          _tag: "Preview",
          at: pending.at,
          nodeId: pending.nodeId,
          mediaType: pending.mediaType,
          url
        }
        const written = yield* lock.withPermits(1)(Effect.suspend(() => {
          if (numbered >= ATTEMPT_SPAN - 1) return Effect.succeed(false)
          numbered += 1
          return Effect.as(store.append(executionId, [{ id: eventId(version, attempt, numbered), report }]), true)
        }))
        if (!written) return
        previewKey = key
        yield* events.changed(executionId)
        yield* store.announce(executionId)
        if (previous !== undefined && blobs.value.deleteKeys !== undefined) yield* blobs.value.deleteKeys([previous])
      }).pipe(
        Effect.catchAll((error) => Effect.logWarning(`execution ${executionId}: a preview not stored`, error))
      )
    })

    /** Writes the preview at once after a quiet spell, else at the end of the interval (one write pending at a time). */
    const previewDue = Effect.suspend(() => {
      if (previewScheduled) return Effect.void
      previewScheduled = true
      return Effect.flatMap(now, (at) => {
        const wait = Math.max(0, lastPreview + PREVIEW_INTERVAL_MS - at)
        const run = Effect.zipRight(
          Effect.sync(() => {
            previewScheduled = false
          }),
          writePreview
        )
        return Effect.asVoid(Effect.forkIn(wait === 0 ? run : Effect.delay(run, wait), scope))
      })
    })

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

    const reportsOf = (nodeId: string): Reports => ({
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
        }),
      preview: (bytes, mediaType) => {
        if (bytes.length > PREVIEW_BYTES) {
          return Effect.logDebug(
            `node ${nodeId}: a preview of ${bytes.length} bytes is over ${PREVIEW_BYTES}, not kept`
          )
        }
        if (Option.isNone(blobs) || Option.isNone(urls)) {
          return Effect.logDebug(`node ${nodeId}: a preview not kept, the instance has no media URLs`)
        }
        return Effect.flatMap(now, (at) => {
          preview = { nodeId, mediaType, bytes, at }
          return previewDue
        })
      }
    })

    return {
      reportsOf,
      // A pending preview is written before the save too: the terminal snapshot comes after it.
      saving: (save, next) =>
        Effect.zipRight(
          writePreview,
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
        )
    }
  }
})
