/**
 * A run as its page follows it (`LiveRun`): the execution, read once and then followed until it
 * ends (its event stream, else long polling), how it is followed, each node's latest progress and
 * the log lines (those logged before the stream opened read once from `…/logs`), the newest live
 * preview image, or the failure that stopped the reading.
 */
import { useEffect, useState } from "preact/hooks"
import { isAbort } from "../../api/Api.js"
import { follow } from "../../api/LiveRun.js"
import { useApi } from "../../api/Remote.js"
import { type ExecutionView, isFinished, type LogLine, type Preview, type Progress } from "../../api/Wire.js"

/** What the page knows of the run so far. */
export interface FollowedRun {
  readonly execution: ExecutionView | undefined
  /** Sets the execution as an answer of the API gave it (a cancel's). */
  readonly setExecution: (update: (current: ExecutionView | undefined) => ExecutionView | undefined) => void
  readonly failure: unknown
  readonly mode: "live" | "polling" | undefined
  readonly progress: ReadonlyMap<string, Progress>
  readonly lines: ReadonlyArray<LogLine>
  /** The newest live preview image the stream brought, if any. */
  readonly preview: Preview | undefined
}

/** A log line's identity: a line read from `…/logs` and from the stream is kept once. */
export const lineKey = (line: LogLine) => `${line.at}|${line.nodeId ?? ""}|${line.level}|${line.message}`

/** Follows `executionId` while the calling view shows. */
export const useFollowedRun = (executionId: string): FollowedRun => {
  const api = useApi()
  const [execution, setExecution] = useState<ExecutionView | undefined>(undefined)
  const [failure, setFailure] = useState<unknown>(undefined)
  const [mode, setMode] = useState<"live" | "polling" | undefined>(undefined)
  const [progress, setProgress] = useState<ReadonlyMap<string, Progress>>(new Map())
  const [lines, setLines] = useState<ReadonlyArray<LogLine>>([])
  const [preview, setPreview] = useState<Preview | undefined>(undefined)

  useEffect(() => {
    const controller = new AbortController()
    const signal = controller.signal
    const seen = new Set<string>()
    const addLines = (added: ReadonlyArray<LogLine>) => {
      const fresh = added.filter((line) => !seen.has(lineKey(line)))
      for (const line of fresh) seen.add(lineKey(line))
      if (fresh.length > 0) {
        setLines((current) => [...current, ...fresh].sort((a, b) => (a.at < b.at ? -1 : a.at > b.at ? 1 : 0)))
      }
    }
    const readLogs = () => api.executions.logs(executionId, signal).then(addLines, () => {})
    let logsRead = false
    const run = async () => {
      const first = await api.executions.get(executionId, signal)
      setExecution(first)
      if (isFinished(first.status)) return void readLogs()
      await follow(api, executionId, {
        execution: setExecution,
        progress: (p) => setProgress((current) => new Map(current).set(p.nodeId, p)),
        log: (line) => addLines([line]),
        preview: setPreview,
        mode: (m) => {
          setMode(m)
          // The stream goes on from now: the lines before it are read once it is open.
          if (m === "live" && !logsRead) {
            logsRead = true
            void readLogs()
          }
        }
      }, signal)
    }
    run().catch((error: unknown) => {
      if (!signal.aborted && !isAbort(error)) setFailure(error)
    })
    return () => controller.abort()
  }, [executionId])

  return { execution, setExecution, failure, mode, progress, lines, preview }
}
