/**
 * A run's page (`/runs/{executionId}`): its status followed live (`FollowedRun`), "Cancel" and
 * "Run again" (`RunActions`), the error, the live preview while it runs (`RunPreview`), the
 * outputs by type, each node's progress (`RunProgress`), timings and inputs (`RunFacts`), the log
 * lines (`RunLogs`) and the webhook's deliveries (`RunWebhook`). Each part holds its own state; this view reads the run's app and
 * workflow for the names they show.
 */
import { useMemo } from "preact/hooks"
import { ApiError, isNotAvailable } from "../api/Api.js"
import { useApi, useRemote } from "../api/Remote.js"
import { isFinished } from "../api/Wire.js"
import { Failure, Loading, useTitle } from "../components/Feedback.js"
import { shortId } from "../components/ShortId.js"
import { StatusBadge } from "../components/Status.js"
import { Link } from "../Router.js"
import { useFollowedRun } from "./run/FollowedRun.js"
import { OutputView } from "./run/OutputView.js"
import { RunActions } from "./run/RunActions.js"
import { RunFacts } from "./run/RunFacts.js"
import { RunLogs } from "./run/RunLogs.js"
import { RunPreview } from "./run/RunPreview.js"
import { RunProgress } from "./run/RunProgress.js"
import { RunWebhook } from "./run/RunWebhook.js"

/** The view of `executionId`. */
export const RunView = ({ executionId }: { readonly executionId: string }) => {
  const api = useApi()
  const { execution, failure, lines, mode, preview, progress, setExecution } = useFollowedRun(executionId)
  useTitle(`Run ${shortId(executionId)}`)
  const appId = execution?.appId

  const [app] = useRemote(
    (signal) => (appId === undefined ? Promise.resolve(undefined) : api.apps.get(appId, signal)),
    [appId]
  )
  const [graph] = useRemote(
    (signal) => (appId === undefined ? Promise.resolve(undefined) : api.apps.workflow(appId, signal)),
    [appId]
  )
  const nodes = graph.state === "ready" && graph.value !== undefined ? graph.value.nodes : []
  const nodeLabels = useMemo(() => new Map(nodes.map((n) => [n.id, n.label])), [graph])
  const labelOf = (nodeId: string | null) => (nodeId === null ? "appexec" : nodeLabels.get(nodeId) ?? nodeId)

  if (failure !== undefined) {
    const missing = failure instanceof ApiError && failure.status === 404 && !isNotAvailable(failure)
    return (
      <section>
        <h1>Run</h1>
        {missing
          ? <p class="notice error" role="alert">This run does not exist, or belongs to another workspace.</p>
          : <Failure error={failure} what="this run" />}
        <p>
          <Link to={{ name: "runs" }}>See the runs</Link>
        </p>
      </section>
    )
  }
  if (execution === undefined) return <Loading what="the run" />

  const finished = isFinished(execution.status)
  const appName = app.state === "ready" && app.value !== undefined ? app.value.name : undefined
  return (
    <section class="run-view" data-execution-id={execution.executionId}>
      <p class="crumbs">
        <Link to={{ name: "runs" }}>Runs</Link> /
      </p>
      <h1>Run</h1>
      <p class="run-of">
        {appId !== undefined && (
          <>
            <Link to={{ name: "app", appId }}>{appName ?? "Its app"}</Link>
            {" · "}
          </>
        )}
        <code>{execution.executionId}</code>
      </p>
      <div class="run-status" aria-live="polite">
        <StatusBadge status={execution.status} testId="run-status" />
        {!finished && mode !== undefined && (
          <span class="mode" data-testid="follow-mode">
            {mode === "live" ? "Live" : "Checking for changes"}
          </span>
        )}
      </div>
      <RunActions execution={execution} setExecution={setExecution} app={app} />
      {execution.errorMessage !== null && (
        <section aria-labelledby="error-title">
          <h2 id="error-title">Error</h2>
          <p class="notice error" data-testid="run-error">
            {execution.errorMessage}
          </p>
        </section>
      )}
      <RunPreview preview={preview} finished={finished} labelOf={labelOf} />
      <section aria-labelledby="outputs-title">
        <h2 id="outputs-title">Outputs</h2>
        {execution.outputs.length === 0
          ? <p class="empty">This app has no outputs.</p>
          : (
            <div class="outputs">
              {execution.outputs.map((output) => <OutputView key={output.id} output={output} />)}
            </div>
          )}
      </section>
      <RunProgress
        progress={progress}
        status={execution.status}
        nodeOrder={nodes.map((n) => n.id)}
        labelOf={labelOf}
      />
      <RunFacts execution={execution} />
      <RunLogs lines={lines} labelOf={labelOf} />
      <RunWebhook executionId={executionId} finished={finished} />
    </section>
  )
}
