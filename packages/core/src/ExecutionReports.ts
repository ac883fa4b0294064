/**
 * Port: what running executions report besides their status and outputs (docs/api.md#live-executions):
 * each node's latest progress, a bounded log, and the newest live preview image. Written by the worker that runs the execution, a
 * few times a second at most (`Reporter` coalesces), read by the event streams and the logs read.
 *
 * Every report carries its event id (`eventId`): the stream's SSE `id`. Ids increase along an
 * execution's life, and interleave with the ids of its snapshots: an execution whose view is at
 * `version` (see `viewVersion`) has the snapshot id `version × 10⁹`, and the reports written
 * while it is there come after it and before the next snapshot.
 */
import type { ExecutionId } from "@appexec/api/Ids"
import type { LogLevel } from "@appexec/api/Live"
import { Context, type Effect, type Stream } from "effect"
import type { StorageError } from "./Errors.js"

/** Ids of one version of the view: snapshot `version × VERSION_SPAN`, reports after it. */
export const VERSION_SPAN = 1_000_000_000
/** Ids of one attempt (claim) within a version: reports of attempt `a` from `a × ATTEMPT_SPAN`. */
export const ATTEMPT_SPAN = 1_000_000

/** The event id of the `n`th report (from 1) that attempt `attempt` wrote while the view was at `version`. */
export const eventId = (version: number, attempt: number, n: number): number =>
  version * VERSION_SPAN + attempt * ATTEMPT_SPAN + n

/** The event id of the snapshot of a view at `version`. */
export const snapshotId = (version: number): number => version * VERSION_SPAN

/** The version of the view a client that has seen event `id` has seen. */
export const versionOf = (id: number): number => Math.floor(id / VERSION_SPAN)

/** Most log lines kept per execution; older ones are dropped. */
export const LOG_LINES = 1000
/** Most bytes of log messages kept per execution (UTF-16 code units, as `length` counts); older lines are dropped. */
export const LOG_BYTES = 64 * 1024
/** Longest message of one log line or progress report; longer ones are cut with an ellipsis. */
export const MESSAGE_LENGTH = 4096

/** Most bytes of one live preview image (`preview` of the node context); larger ones are not kept. */
export const PREVIEW_BYTES = 512 * 1024
/** Least time between two live previews an execution stores (ms); a newer one within it replaces the pending one. */
export const PREVIEW_INTERVAL_MS = 500

/** The media types of live preview images. */
export type PreviewMediaType = "image/jpeg" | "image/png"

/** What a node reported. Times are epoch ms. */
export type Report =
  | {
    readonly _tag: "Progress"
    readonly at: number
    readonly nodeId: string
    readonly fraction: number
    readonly message: string | null
  }
  | {
    readonly _tag: "Log"
    readonly at: number
    /** Null on lines appexec writes itself. */
    readonly nodeId: string | null
    readonly level: LogLevel
    readonly message: string
  }
  | {
    readonly _tag: "Preview"
    readonly at: number
    readonly nodeId: string
    readonly mediaType: PreviewMediaType
    /** Where the consumer GETs the image: a media URL of the blob stored under the execution's prefix. */
    readonly url: string
  }

/** A report with its event id. */
export interface StoredReport {
  readonly id: number
  readonly report: Report
}

/** What `after` answers. */
export interface ReportsAfter {
  /** The kept reports with an id above the one asked for, by id. */
  readonly reports: ReadonlyArray<StoredReport>
  /** The id of the newest log line dropped to keep the log bounded; 0 when none was. */
  readonly droppedThrough: number
}

/** What `logs` answers. */
export interface KeptLogs {
  /** The kept log lines, oldest first (`Report` of tag `Log`), with their ids. */
  readonly lines: ReadonlyArray<StoredReport>
  /** How many older lines were dropped; 0 when none was. */
  readonly dropped: number
}

/** Storage of reports. */
export class ExecutionReports extends Context.Tag("@appexec/core/ExecutionReports")<
  ExecutionReports,
  {
    /**
     * Records reports of one execution, in one atomic write. A progress report replaces the
     * execution's earlier progress of the same node (one is kept per node: the newest); a log
     * line is added, and then the oldest lines are dropped until at most `LOG_LINES` lines and
     * `LOG_BYTES` of messages are kept, counting what was dropped (`logs`, `after`). A preview
     * replaces the execution's earlier preview, whatever its node (one is kept: the newest).
     */
    readonly append: (
      executionId: ExecutionId,
      reports: ReadonlyArray<StoredReport>
    ) => Effect.Effect<void, StorageError>
    /** The kept reports of an execution with an id above `afterId`, by id. */
    readonly after: (executionId: ExecutionId, afterId: number) => Effect.Effect<ReportsAfter, StorageError>
    /** The kept log lines of an execution, oldest first, and how many were dropped. */
    readonly logs: (executionId: ExecutionId) => Effect.Effect<KeptLogs, StorageError>
    /**
     * Tells other processes on the same storage that an execution has news (reports, or a change
     * of its view made by this process), soon and without waiting; requests made meanwhile may be
     * sent as one. A storage only one process uses does nothing.
     */
    readonly announce: (executionId: ExecutionId) => Effect.Effect<void>
    /**
     * The ids of executions other processes `announce`d, as they come; never ends. A storage only
     * one process uses never emits.
     */
    readonly announced: Stream.Stream<ExecutionId>
  }
>() {}
