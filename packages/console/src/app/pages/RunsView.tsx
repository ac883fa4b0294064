/**
 * The workspace's runs (`GET /v1/executions`), newest first: filtered by status and by app, a
 * page at a time with "More". Failed runs can be selected and run again together, each with its
 * own app and inputs.
 */
import { useEffect, useState } from "preact/hooks"
import { isAbort } from "../api/Api.js"
import { useApi, useRemote } from "../api/Remote.js"
import { type ExecutionStatus, type ExecutionView, statuses } from "../api/Wire.js"
import { Failure, Loading, messageOf, useTitle } from "../components/Feedback.js"
import { shortId } from "../components/ShortId.js"
import { StatusBadge, statusWords } from "../components/Status.js"
import { between, formatTime } from "../components/Time.js"
import { Link } from "../Router.js"

/** Runs per page. */
const PAGE = 25

/** The list so far: the runs read, the cursor of the next page, or a failure. */
interface Listed {
  readonly runs: ReadonlyArray<ExecutionView>
  readonly next: string | null
  readonly loading: boolean
  readonly error: unknown
}

/** What a "Run again" of the selection did. */
interface Rerun {
  readonly started: ReadonlyArray<string>
  readonly failed: ReadonlyArray<{ readonly executionId: string; readonly message: string }>
}

/** The view. */
export const RunsView = () => {
  useTitle("Runs")
  const api = useApi()
  const [status, setStatus] = useState<ExecutionStatus | "">("")
  const [appId, setAppId] = useState("")
  const [round, setRound] = useState(0)
  const [listed, setListed] = useState<Listed>({ runs: [], next: null, loading: true, error: undefined })
  const [selected, setSelected] = useState<ReadonlySet<string>>(new Set())
  const [rerun, setRerun] = useState<Rerun | undefined>(undefined)
  const [busy, setBusy] = useState(false)
  const [apps] = useRemote((signal) => api.apps.list("", signal), [])

  const filter = { status: status === "" ? undefined : status, appId: appId === "" ? undefined : appId, limit: PAGE }

  useEffect(() => {
    const controller = new AbortController()
    setListed({ runs: [], next: null, loading: true, error: undefined })
    setSelected(new Set())
    api.executions.list(filter, controller.signal).then(
      (page) => setListed({ runs: page.data, next: page.nextCursor, loading: false, error: undefined }),
      (error: unknown) => {
        if (!isAbort(error)) setListed({ runs: [], next: null, loading: false, error })
      }
    )
    return () => controller.abort()
  }, [status, appId, round])

  const more = () => {
    if (listed.next === null) return
    setListed({ ...listed, loading: true })
    api.executions.list({ ...filter, cursor: listed.next }).then(
      (page) =>
        setListed({ runs: [...listed.runs, ...page.data], next: page.nextCursor, loading: false, error: undefined }),
      (error: unknown) => setListed({ ...listed, loading: false, error })
    )
  }

  const appNames = new Map(apps.state === "ready" ? apps.value.map((a) => [a.appId, a.name]) : [])
  const toggle = (executionId: string) =>
    setSelected((current) => {
      const next = new Set(current)
      if (!next.delete(executionId)) next.add(executionId)
      return next
    })
  const chosen = listed.runs.filter((run) => selected.has(run.executionId))

  const runAgain = async () => {
    setBusy(true)
    const started: Array<string> = []
    const failed: Array<{ executionId: string; message: string }> = []
    for (const run of chosen) {
      if (run.appId === undefined || run.inputs === undefined) {
        failed.push({ executionId: run.executionId, message: "its app and inputs are not available on this server" })
        continue
      }
      try {
        started.push((await api.executions.start(run.appId, run.inputs)).executionId)
      } catch (error) {
        failed.push({ executionId: run.executionId, message: messageOf(error) })
      }
    }
    setRerun({ started, failed })
    setBusy(false)
    setRound((r) => r + 1)
  }

  return (
    <section>
      <h1>Runs</h1>
      <form class="toolbar filters" onSubmit={(event) => event.preventDefault()}>
        <div class="field inline">
          <label for="filter-status">Status</label>
          <select
            id="filter-status"
            value={status}
            onChange={(event) => setStatus(event.currentTarget.value as ExecutionStatus | "")}
          >
            <option value="">All</option>
            {statuses.map((s) => <option key={s} value={s}>{statusWords[s]}</option>)}
          </select>
        </div>
        <div class="field inline">
          <label for="filter-app">App</label>
          <select id="filter-app" value={appId} onChange={(event) => setAppId(event.currentTarget.value)}>
            <option value="">All</option>
            {apps.state === "ready" && apps.value.map((a) => <option key={a.appId} value={a.appId}>{a.name}</option>)}
          </select>
        </div>
        <button type="button" class="quiet" onClick={() => setRound((r) => r + 1)}>
          Refresh
        </button>
      </form>
      {rerun !== undefined && (
        <div class={`notice ${rerun.failed.length > 0 ? "error" : ""}`} role="status" data-testid="rerun-result">
          <p>
            Started {rerun.started.length} run{rerun.started.length === 1 ? "" : "s"}
            {rerun.failed.length > 0 && `; ${rerun.failed.length} could not be started`}.
          </p>
          {rerun.started.length > 0 && (
            <ul>
              {rerun.started.map((id) => (
                <li key={id}>
                  <Link to={{ name: "run", executionId: id }}>Run {shortId(id)}</Link>
                </li>
              ))}
            </ul>
          )}
          {rerun.failed.length > 0 && (
            <ul>
              {rerun.failed.map((f) => <li key={f.executionId}>Run {shortId(f.executionId)}: {f.message}</li>)}
            </ul>
          )}
        </div>
      )}
      {listed.error !== undefined && <Failure error={listed.error} what="the runs" feature="Listing runs" />}
      {listed.error === undefined && (
        <>
          <div class="actions selection">
            <button type="button" onClick={runAgain} disabled={busy || chosen.length === 0}>
              Run again
            </button>
            <span class="help" role="status">
              {chosen.length === 0 ? "Select failed runs to run them again." : `${chosen.length} selected`}
            </span>
          </div>
          {!listed.loading && listed.runs.length === 0
            ? <p class="empty">No runs{status === "" && appId === "" ? " yet" : " match"}.</p>
            : (
              <div class="table-scroll">
                <table class="runs stacks" data-testid="runs-table">
                  <caption class="visually-hidden">Runs, newest first</caption>
                  <thead>
                    <tr>
                      <th scope="col">
                        <span class="visually-hidden">Select</span>
                      </th>
                      <th scope="col">Run</th>
                      <th scope="col">App</th>
                      <th scope="col">Status</th>
                      <th scope="col">Created</th>
                      <th scope="col">Took</th>
                    </tr>
                  </thead>
                  <tbody>
                    {listed.runs.map((run) => {
                      const short = shortId(run.executionId)
                      return (
                        <tr key={run.executionId} data-execution-id={run.executionId} data-status={run.status}>
                          <td class="select" data-label="Select">
                            {run.status === "failed" && (
                              <input
                                type="checkbox"
                                aria-label={`Select run ${short}`}
                                checked={selected.has(run.executionId)}
                                onChange={() => toggle(run.executionId)}
                              />
                            )}
                          </td>
                          <td data-label="Run">
                            <Link to={{ name: "run", executionId: run.executionId }}>
                              <code>{short}</code>
                            </Link>
                          </td>
                          <td data-label="App">
                            {run.appId === undefined ? "—" : appNames.get(run.appId) ?? shortId(run.appId)}
                          </td>
                          <td data-label="Status">
                            <StatusBadge status={run.status} />
                          </td>
                          <td data-label="Created">{formatTime(run.createdAt)}</td>
                          <td data-label="Took">{between(run.startedAt, run.completedAt)}</td>
                        </tr>
                      )
                    })}
                  </tbody>
                </table>
              </div>
            )}
          {listed.loading && <Loading what="runs" />}
          {!listed.loading && listed.next !== null && (
            <div class="actions">
              <button type="button" onClick={more}>
                More
              </button>
            </div>
          )}
        </>
      )}
    </section>
  )
}
