/** A run's log lines, oldest first: time, level, the node that logged (by its label) and the message. */
import type { LogLine } from "../../api/Wire.js"
import { formatTime } from "../../components/Time.js"
import { lineKey } from "./FollowedRun.js"

/** The lines of a run; `labelOf` names the node of each (appexec's own lines have none). */
export const RunLogs = (
  { labelOf, lines }: {
    readonly lines: ReadonlyArray<LogLine>
    readonly labelOf: (nodeId: string | null) => string
  }
) => (
  <section aria-labelledby="logs-title">
    <h2 id="logs-title">Logs</h2>
    {lines.length === 0
      ? <p class="empty">No log lines.</p>
      : (
        <ol class="logs" data-testid="run-logs">
          {lines.map((line) => (
            <li key={lineKey(line)} class={`log level-${line.level}`}>
              <time dateTime={line.at}>{formatTime(line.at)}</time>
              <span class="level">{line.level}</span>
              <span class="node">{labelOf(line.nodeId)}</span>
              <span class="message">{line.message}</span>
            </li>
          ))}
        </ol>
      )}
  </section>
)
