/**
 * In-memory `ExecutionReports`: each execution's newest progress per node, its bounded log and its
 * newest preview, kept beside the executions of `MemoryExecutions` (which deletes them with their execution).
 * One process: `announce` does nothing and `announced` never emits.
 */
import type { ExecutionId } from "@appexec/api/Ids"
import { ExecutionReports } from "@appexec/core"
import { Effect, Stream } from "effect"

/** What is kept of one execution. */
interface Kept {
  /** Newest progress per node. */
  readonly progress: Map<string, ExecutionReports.StoredReport>
  /** The newest preview, if any. */
  preview: ExecutionReports.StoredReport | undefined
  /** Log lines, oldest first. */
  readonly lines: Array<ExecutionReports.StoredReport>
  /** Bytes of the kept lines' messages. */
  bytes: number
  dropped: number
  droppedThrough: number
}

const messageLength = (stored: ExecutionReports.StoredReport) =>
  stored.report._tag === "Log" ? stored.report.message.length : 0

/** The reports of every execution, by id; `forget` drops an execution's (with the execution). */
export const make = () => {
  const kept = new Map<string, Kept>()
  const keptOf = (executionId: string): Kept => {
    let entry = kept.get(executionId)
    if (entry === undefined) {
      entry = { progress: new Map(), preview: undefined, lines: [], bytes: 0, dropped: 0, droppedThrough: 0 }
      kept.set(executionId, entry)
    }
    return entry
  }
  const service: ExecutionReports.ExecutionReports["Type"] = {
    append: (executionId, reports) =>
      Effect.sync(() => {
        const entry = keptOf(executionId)
        for (const stored of reports) {
          if (stored.report._tag === "Progress") {
            entry.progress.set(stored.report.nodeId, stored)
            continue
          }
          if (stored.report._tag === "Preview") {
            entry.preview = stored
            continue
          }
          entry.lines.push(stored)
          entry.bytes += messageLength(stored)
        }
        entry.lines.sort((a, b) => a.id - b.id)
        while (
          entry.lines.length > ExecutionReports.LOG_LINES ||
          (entry.bytes > ExecutionReports.LOG_BYTES && entry.lines.length > 0)
        ) {
          const oldest = entry.lines.shift()!
          entry.bytes -= messageLength(oldest)
          entry.dropped += 1
          entry.droppedThrough = Math.max(entry.droppedThrough, oldest.id)
        }
      }),
    after: (executionId: ExecutionId, afterId: number) =>
      Effect.sync(() => {
        const entry = kept.get(executionId)
        if (entry === undefined) return { reports: [], droppedThrough: 0 }
        const reports = [...entry.progress.values(), ...(entry.preview ? [entry.preview] : []), ...entry.lines]
          .filter((stored) => stored.id > afterId)
          .sort((a, b) => a.id - b.id)
        return { reports, droppedThrough: entry.droppedThrough }
      }),
    logs: (executionId) =>
      Effect.sync(() => {
        const entry = kept.get(executionId)
        return entry === undefined ? { lines: [], dropped: 0 } : { lines: [...entry.lines], dropped: entry.dropped }
      }),
    announce: () => Effect.void,
    announced: Stream.never
  }
  return { service, forget: (executionId: string) => kept.delete(executionId) }
}
