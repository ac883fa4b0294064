/**
 * A run's progress: a bar per node that reported it, in the workflow's order, with the node's
 * message, or "Done" once the run completed, or where it stopped (`NodeProgress.barOf`).
 */
import type { ExecutionStatus, Progress } from "../../api/Wire.js"
import { barOf } from "./NodeProgress.js"

/** The bars of `progress`, ordered as `nodeOrder`, labelled by `labelOf`. */
export const RunProgress = (
  { labelOf, nodeOrder, progress, status }: {
    readonly progress: ReadonlyMap<string, Progress>
    readonly status: ExecutionStatus
    readonly nodeOrder: ReadonlyArray<string>
    readonly labelOf: (nodeId: string) => string
  }
) => {
  if (progress.size === 0) return null
  const rank = (nodeId: string) => {
    const index = nodeOrder.indexOf(nodeId)
    return index === -1 ? nodeOrder.length : index
  }
  const bars = [...progress.values()]
    .sort((a, b) => rank(a.nodeId) - rank(b.nodeId))
    .map((reported) => barOf(reported, status))
  return (
    <section aria-labelledby="progress-title">
      <h2 id="progress-title">Progress</h2>
      <ul class="progress-list">
        {bars.map((bar) => (
          <li
            key={bar.nodeId}
            data-node={bar.nodeId}
            data-stopped={bar.stopped}
            data-percent={bar.percent}
            class={bar.stopped ? "stopped" : bar.percent === 100 ? "done" : undefined}
          >
            <label for={`progress-${bar.nodeId}`}>{labelOf(bar.nodeId)}</label>
            <progress id={`progress-${bar.nodeId}`} max={1} value={bar.fraction}>
              {bar.percent}%
            </progress>
            <span class="percent">{bar.percent}%</span>
            {bar.note !== null && <span class="help">{bar.note}</span>}
          </li>
        ))}
      </ul>
    </section>
  )
}
