/** An execution's status, as a badge whose colour and word match. */
import type { ExecutionStatus } from "../api/Wire.js"

/** Each status as a word. */
export const statusWords: Readonly<Record<ExecutionStatus, string>> = {
  queued: "Queued",
  running: "Running",
  completed: "Completed",
  failed: "Failed"
}

/** The badge of `status`. */
export const StatusBadge = ({ status, testId }: { readonly status: ExecutionStatus; readonly testId?: string }) => (
  <span class={`badge status-${status}`} data-testid={testId} data-status={status}>
    {statusWords[status] ?? status}
  </span>
)
