/**
 * How a node's progress reads on its run's page. Once the run has completed every node is done,
 * whatever it last reported (a node may stop reporting at 98% and finish); a canceled or failed
 * run leaves a bar it did not fill greyed, saying where it stopped.
 */
import type { ExecutionStatus, Progress } from "../../api/Wire.js"

/** How a bar reads. */
export interface Bar {
  readonly nodeId: string
  /** From 0 to 1. */
  readonly fraction: number
  /** Whole percent. */
  readonly percent: number
  /** Left short by a run that ended otherwise than completed. */
  readonly stopped: boolean
  /** The line under the bar, if any. */
  readonly note: string | null
}

/** How the progress `reported` of a node reads on a run whose status is `status`. */
export const barOf = (reported: Progress, status: ExecutionStatus): Bar => {
  if (status === "completed") {
    return { nodeId: reported.nodeId, fraction: 1, percent: 100, stopped: false, note: "Done" }
  }
  const percent = Math.round(reported.fraction * 100)
  // A node a canceled or failed run left unfinished stopped where it was: not shown as going on.
  const stopped = status === "failed" && reported.fraction < 1
  return {
    nodeId: reported.nodeId,
    fraction: reported.fraction,
    percent,
    stopped,
    note: stopped ? `Stopped at ${percent}%: the run ended first.` : reported.message
  }
}
