/**
 * A run's page (`/runs/{executionId}`): its status followed live (`LiveRun`: the event stream,
 * long polling as fallback), each node's progress, the log lines, the outputs by type, timings,
 * attempt and queue position, the error, the inputs, and the webhook's deliveries with each
 * attempt. "Cancel" while it runs; "Run again" opens the app's form prefilled with this run's
 * inputs; "Redeliver webhook" for a finished run that had one.
 */
import { Fragment } from "preact"
import { useEffect, useMemo, useRef, useState } from "preact/hooks"
import { ApiError, isAbort, isNotAvailable } from "./Api.js"
import { Failure, Loading, messageOf, useTitle } from "./Feedback.js"
import { follow } from "./LiveRun.js"
import { OutputView } from "./OutputView.js"
import { useApi, useRemote } from "./Remote.js"
import { Link, useNavigation } from "./Router.js"
import { RunForm } from "./RunForm.js"
import { shortId } from "./ShortId.js"
import { StatusBadge } from "./Status.js"
import { between, formatTime } from "./Time.js"
import { type ExecutionView, isFinished, type LogLine, type Progress, type WebhookDelivery } from "./Wire.js"

/** What a cancel's answer says, until the run ends (its error then says it was canceled). */
const CANCEL_REQUESTED = "Cancel requested."

/** How often a webhook that is still being delivered is read again. */
const DELIVERY_REFRESH_MS = 3_000

const lineKey = (line: LogLine) => `${line.at}|${line.nodeId ?? ""}|${line.level}|${line.message}`

/** The run's timings, attempt and queue position. */
const Timings = ({ execution }: { readonly execution: ExecutionView }) => (
  <dl class="facts" data-testid="run-timings">
    <dt>Created</dt>
    <dd>{formatTime(execution.createdAt)}</dd>
    <dt>Started</dt>
    <dd>{formatTime(execution.startedAt)}</dd>
    <dt>Completed</dt>
    <dd>{formatTime(execution.completedAt)}</dd>
    <dt>Queued for</dt>
    <dd>{between(execution.createdAt, execution.startedAt)}</dd>
    <dt>Ran for</dt>
    <dd>{between(execution.startedAt, execution.completedAt)}</dd>
    <dt>Attempt</dt>
    <dd data-testid="run-attempt">{execution.attempt ?? "—"}</dd>
    {execution.status === "queued" && execution.queuePosition !== undefined && (
      <>
        <dt>Queue position</dt>
        <dd data-testid="queue-position">
          {execution.queuePosition === 0
            ? "next in its workspace"
            : `${execution.queuePosition} ahead in its workspace`}
        </dd>
      </>
    )}
  </dl>
)

/** The webhook's delivery and its attempts. */
const Delivery = ({ delivery }: { readonly delivery: WebhookDelivery }) => (
  <div class="delivery" data-testid="webhook-delivery" data-status={delivery.status}>
    <dl class="facts">
      <dt>URL</dt>
      <dd class="break">{delivery.url}</dd>
      <dt>Delivery</dt>
      <dd>
        <span class={`badge delivery-${delivery.status}`}>{delivery.status}</span>
      </dd>
    </dl>
    {delivery.attempts.length === 0
      ? <p class="help">No attempt yet.</p>
      : (
        <div class="table-scroll">
          <table>
            <caption>Attempts</caption>
            <thead>
              <tr>
                <th scope="col">#</th>
                <th scope="col">Time</th>
                <th scope="col">Answer</th>
                <th scope="col">Error</th>
              </tr>
            </thead>
            <tbody>
              {delivery.attempts.map((attempt, index) => (
                <tr key={`${attempt.at}-${index}`}>
                  <td>{index + 1}</td>
                  <td>{formatTime(attempt.at)}</td>
                  <td>{attempt.statusCode ?? "no answer"}</td>
                  <td>{attempt.error ?? "—"}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
  </div>
)

/** The view of `executionId`. */
export const RunView = ({ executionId }: { readonly executionId: string }) => {
  const api = useApi()
  const navigation = useNavigation()
  const [execution, setExecution] = useState<ExecutionView | undefined>(undefined)
  const [failure, setFailure] = useState<unknown>(undefined)
  const [mode, setMode] = useState<"live" | "polling" | undefined>(undefined)
  const [progress, setProgress] = useState<ReadonlyMap<string, Progress>>(new Map())
  const [lines, setLines] = useState<ReadonlyArray<LogLine>>([])
  const [againOpen, setAgainOpen] = useState(false)
  const [said, setSaid] = useState<{ readonly text: string; readonly error: boolean } | undefined>(undefined)
  const [busy, setBusy] = useState(false)
  useTitle(`Run ${shortId(executionId)}`)

  const finished = execution !== undefined && isFinished(execution.status)
  const appId = execution?.appId

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

  const [app] = useRemote(
    (signal) => (appId === undefined ? Promise.resolve(undefined) : api.apps.get(appId, signal)),
    [appId]
  )
  const [graph] = useRemote(
    (signal) => (appId === undefined ? Promise.resolve(undefined) : api.apps.workflow(appId, signal)),
    [appId]
  )
  const [delivery, reloadDelivery, setDelivery] = useRemote((signal) => api.executions.webhook(executionId, signal), [
    executionId
  ])
  // A run that ends while it is shown has its delivery read again: it has just begun.
  const wasFinished = useRef<boolean | undefined>(undefined)
  useEffect(() => {
    if (wasFinished.current === false && finished) reloadDelivery()
    if (execution !== undefined) wasFinished.current = finished
  }, [finished, execution === undefined])
  const pending = delivery.state === "ready" && delivery.value !== null && delivery.value.status === "pending"
  useEffect(() => {
    if (!pending || !finished) return
    const timer = setInterval(reloadDelivery, DELIVERY_REFRESH_MS)
    return () => clearInterval(timer)
  }, [pending, finished])

  const nodeLabels = useMemo(
    () =>
      new Map(
        graph.state === "ready" && graph.value !== undefined ? graph.value.nodes.map((n) => [n.id, n.label]) : []
      ),
    [graph]
  )
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

  const cancel = async () => {
    setBusy(true)
    setSaid(undefined)
    try {
      const answered = await api.executions.cancel(executionId)
      // The run can end, as its stream tells, before the cancel's answer (its state when asked) arrives.
      setExecution((current) => (current !== undefined && isFinished(current.status) ? current : answered))
      setSaid({ text: CANCEL_REQUESTED, error: false })
    } catch (error) {
      setSaid({ text: messageOf(error), error: true })
      if (error instanceof ApiError && error.status === 409) {
        api.executions.get(executionId).then(setExecution, () => {})
      }
    } finally {
      setBusy(false)
    }
  }
  const redeliver = async () => {
    setBusy(true)
    setSaid(undefined)
    try {
      setDelivery(await api.executions.redeliver(executionId))
      setSaid({ text: "Redelivery started: a new attempt is on its way.", error: false })
    } catch (error) {
      setSaid({
        text: isNotAvailable(error) ? "Redelivery is not available on this server." : messageOf(error),
        error: !isNotAvailable(error)
      })
    } finally {
      setBusy(false)
    }
  }
  // The server redelivers a webhook whose delivery is over (delivered or given up), not one still being tried.
  const redeliverable = delivery.state === "ready" && delivery.value !== null && delivery.value.status !== "pending"
  const appName = app.state === "ready" && app.value !== undefined ? app.value.name : undefined
  const nodeOrder = graph.state === "ready" && graph.value !== undefined ? graph.value.nodes.map((n) => n.id) : []
  const bars = [...progress.values()].sort((a, b) => nodeOrder.indexOf(a.nodeId) - nodeOrder.indexOf(b.nodeId))

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
      <div class="actions">
        {!finished && (
          <button type="button" class="danger" onClick={cancel} disabled={busy}>
            Cancel
          </button>
        )}
        {appId !== undefined && (
          <button
            type="button"
            onClick={() => setAgainOpen((open) => !open)}
            aria-expanded={againOpen}
          >
            Run again
          </button>
        )}
        {finished && redeliverable && (
          <button type="button" onClick={redeliver} disabled={busy}>
            Redeliver webhook
          </button>
        )}
      </div>
      {said !== undefined && !(finished && said.text === CANCEL_REQUESTED) && (
        <p class={`notice ${said.error ? "error" : ""}`} role={said.error ? "alert" : "status"}>
          {said.text}
        </p>
      )}
      {againOpen && appId !== undefined && (
        <section class="card" aria-labelledby="again-title">
          <h2 id="again-title">Run again</h2>
          {app.state === "loading" && <Loading what="the app" />}
          {app.state === "failed" && <Failure error={app.error} what="the app" />}
          {app.state === "ready" && app.value !== undefined && (
            <RunForm
              app={app.value}
              testId="run-again-form"
              initial={execution.inputs}
              onStarted={(id) => navigation.go({ name: "run", executionId: id })}
            />
          )}
        </section>
      )}
      {execution.errorMessage !== null && (
        <section aria-labelledby="error-title">
          <h2 id="error-title">Error</h2>
          <p class="notice error" data-testid="run-error">
            {execution.errorMessage}
          </p>
        </section>
      )}
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
      {bars.length > 0 && (
        <section aria-labelledby="progress-title">
          <h2 id="progress-title">Progress</h2>
          <ul class="progress-list">
            {bars.map((p) => {
              // A node the run left unfinished (canceled, failed) stopped where it was: not shown as going on.
              const stopped = finished && p.fraction < 1
              return (
                <li key={p.nodeId} data-node={p.nodeId} data-stopped={stopped} class={stopped ? "stopped" : undefined}>
                  <label for={`progress-${p.nodeId}`}>{labelOf(p.nodeId)}</label>
                  <progress id={`progress-${p.nodeId}`} max={1} value={p.fraction}>
                    {Math.round(p.fraction * 100)}%
                  </progress>
                  <span class="percent">{Math.round(p.fraction * 100)}%</span>
                  {stopped && (
                    <span class="help">Stopped at {Math.round(p.fraction * 100)}%: the run ended first.</span>
                  )}
                  {!stopped && p.message !== null && <span class="help">{p.message}</span>}
                </li>
              )
            })}
          </ul>
        </section>
      )}
      <div class="columns">
        <section class="card" aria-labelledby="timings-title">
          <h2 id="timings-title">Timings</h2>
          <Timings execution={execution} />
        </section>
        <section class="card" aria-labelledby="inputs-title">
          <h2 id="inputs-title">Inputs</h2>
          {execution.inputs === undefined
            ? <p class="notice quiet">The inputs of a run are not available on this server.</p>
            : Object.keys(execution.inputs).length === 0
            ? <p class="empty">No inputs.</p>
            : (
              <dl class="facts" data-testid="run-inputs">
                {Object.entries(execution.inputs).map(([name, value]) => (
                  <Fragment key={name}>
                    <dt>{name}</dt>
                    <dd class="break">{value}</dd>
                  </Fragment>
                ))}
              </dl>
            )}
        </section>
      </div>
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
      <section aria-labelledby="webhook-title">
        <h2 id="webhook-title">Webhook</h2>
        {delivery.state === "loading" && <Loading what="the webhook" />}
        {delivery.state === "failed" && (
          <Failure error={delivery.error} what="the webhook's delivery" feature="The webhook's delivery" />
        )}
        {delivery.state === "ready" && delivery.value === null && <p class="empty">This run has no webhook.</p>}
        {delivery.state === "ready" && delivery.value !== null && <Delivery delivery={delivery.value} />}
        {finished && pending && <p class="help">It can be redelivered once this delivery is over.</p>}
      </section>
    </section>
  )
}
