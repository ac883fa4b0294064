/**
 * The operator views, served on the admin port (`appexec serve --admin-port`) with no key: the
 * port is private. One page, read again every few seconds: each workspace's queued and running
 * executions, each app's with its limit and what its queue waits for, the executions finished per
 * minute over the last hour and the share that failed (`MinuteChart`), every process of the
 * deployment (role, version, start, last heartbeat, how many runs and which node types its worker
 * runs), the servers this process runs work on (ComfyUI: busy, idle or unreachable, and the
 * executions on each), and the failed
 * webhook deliveries of every workspace, each with "Redeliver" when the admin app allows actions
 * (`--admin-actions`).
 */
import { useEffect, useMemo, useState } from "preact/hooks"
import { makeOperatorApi } from "../api/OperatorApi.js"
import { useRemote } from "../api/Remote.js"
import { Failure, Loading, messageOf, useTitle } from "../components/Feedback.js"
import { MinuteChart } from "../components/MinuteChart.js"
import { summarize } from "../components/NodeTypes.js"
import { shortId } from "../components/ShortId.js"
import { formatDuration, formatTime } from "../components/Time.js"

/** How often the views are read again. */
const REFRESH_MS = 5_000

/** A role as an operator starts the process. */
const ROLES: Readonly<Record<"serve" | "api" | "worker" | "embedded", string>> = {
  serve: "serve",
  api: "serve --no-worker",
  worker: "worker",
  embedded: "embedded"
}

/** A backend server's kind as the operator configured it. */
const KINDS: Readonly<Record<string, string>> = { comfyui: "ComfyUI (--comfyui)" }

/** The badge of a backend server's state. */
const STATES: Readonly<Record<"busy" | "idle" | "unreachable", string>> = {
  busy: "status-running",
  idle: "status-completed",
  unreachable: "status-failed"
}

const percent = (rate: number | null) =>
  rate === null ? "—" : rate === 0 ? "0%" : `${(rate * 100).toFixed(rate < 0.1 ? 1 : 0)}%`

/** The operator views under `basePath` of the admin port. */
export const OperatorConsole = ({ basePath }: { readonly basePath: string }) => {
  useTitle("Operator views")
  const api = useMemo(() => makeOperatorApi(basePath), [basePath])
  const [tick, setTick] = useState(0)
  const [said, setSaid] = useState<{ readonly text: string; readonly error: boolean } | undefined>(undefined)
  const [busy, setBusy] = useState<string | undefined>(undefined)
  useEffect(() => {
    const timer = setInterval(() => setTick((t) => t + 1), REFRESH_MS)
    return () => clearInterval(timer)
  }, [])
  const [settings] = useRemote((signal) => api.settings(signal), [])
  const [workspaces] = useRemote((signal) => api.workspaces(signal), [tick])
  const [apps] = useRemote((signal) => api.apps(signal), [tick])
  const [throughput] = useRemote((signal) => api.throughput(signal), [tick])
  const [processes] = useRemote((signal) => api.processes(signal), [tick])
  const [backends] = useRemote((signal) => api.backends(signal), [tick])
  const [deliveries, reloadDeliveries] = useRemote((signal) => api.deliveries(signal), [tick])
  const actions = settings.state === "ready" && settings.value.actions

  const redeliver = async (executionId: string) => {
    setBusy(executionId)
    setSaid(undefined)
    try {
      await api.redeliver(executionId)
      setSaid({
        text: `Redelivery of run ${shortId(executionId)} started: a new attempt is on its way.`,
        error: false
      })
      reloadDeliveries()
    } catch (error) {
      setSaid({ text: messageOf(error), error: true })
    } finally {
      setBusy(undefined)
    }
  }

  return (
    <div class="shell operator">
      <a class="skip" href="#main">
        Skip to content
      </a>
      <header class="top">
        <span class="brand">appexec operator views</span>
        <div class="session">
          <span class="badge" data-testid="operator-mode">
            {settings.state !== "ready" ? "…" : actions ? "Actions allowed" : "Read-only"}
          </span>
          <span class="help">Admin port: private, no key</span>
        </div>
      </header>
      <main id="main" tabIndex={-1}>
        <h1>Operator views</h1>
        <p class="description">
          Every workspace of this instance, read again every {REFRESH_MS / 1000} seconds.{" "}
          <button type="button" class="quiet" onClick={() => setTick((t) => t + 1)}>
            Refresh
          </button>
        </p>
        <div class="columns">
          <section class="card" aria-labelledby="queues-title">
            <h2 id="queues-title">Queues</h2>
            {workspaces.state === "loading" && <Loading what="the queues" />}
            {workspaces.state === "failed" && <Failure error={workspaces.error} what="the queues" />}
            {workspaces.state === "ready" && (workspaces.value.length === 0
              ? <p class="empty">Nothing queued or running.</p>
              : (
                <table class="stacks" data-testid="queues-table">
                  <thead>
                    <tr>
                      <th scope="col">Workspace</th>
                      <th scope="col" class="number">Queued</th>
                      <th scope="col" class="number">Running</th>
                    </tr>
                  </thead>
                  <tbody>
                    {workspaces.value.map((w) => (
                      <tr key={w.workspaceId} data-workspace={w.name ?? w.workspaceId}>
                        <td data-label="Workspace">{w.name ?? <code>{shortId(w.workspaceId)}</code>}</td>
                        <td class="number" data-label="Queued" data-testid="queued">{w.queued}</td>
                        <td class="number" data-label="Running" data-testid="running">{w.running}</td>
                      </tr>
                    ))}
                  </tbody>
                </table>
              ))}
          </section>
          <section class="card" aria-labelledby="processes-title">
            <h2 id="processes-title">Processes</h2>
            {processes.state === "loading" && <Loading what="the processes" />}
            {processes.state === "failed" && <Failure error={processes.error} what="the processes" />}
            {processes.state === "ready" && (processes.value.length === 0
              ? <p class="empty">No process has said it runs.</p>
              : (
                <table class="stacks" data-testid="processes-table">
                  <thead>
                    <tr>
                      <th scope="col">Process</th>
                      <th scope="col">Role</th>
                      <th scope="col" class="number">Runs</th>
                      <th scope="col">Node types</th>
                      <th scope="col">Last heartbeat</th>
                    </tr>
                  </thead>
                  <tbody>
                    {processes.value.map((p) => (
                      <tr key={p.processId} data-process={p.name} data-live={p.live}>
                        <td data-label="Process">
                          <span>
                            <code title={p.processId}>{p.name}</code>
                            <span class="help block">
                              {p.version}, started {formatTime(p.startedAt)}
                            </span>
                          </span>
                        </td>
                        <td data-label="Role" data-testid="role">{ROLES[p.role]}</td>
                        <td class="number" data-label="Runs" data-testid="process-running">{p.running}</td>
                        <td data-label="Node types" data-testid="node-types">
                          {p.nodeTypes === null
                            ? <span class="help">no worker</span>
                            : <span title={p.nodeTypes.join(", ")}>{summarize(p.nodeTypes)}</span>}
                        </td>
                        <td data-label="Last heartbeat">
                          <span>
                            {formatDuration(Date.now() - new Date(p.lastHeartbeatAt).getTime())} ago
                            {!p.live && <span class="badge status-failed">lost</span>}
                          </span>
                        </td>
                      </tr>
                    ))}
                  </tbody>
                </table>
              ))}
            <p class="help">
              Every process beats on its lease-renewal schedule; one that stops leaves at once, one that dies shows as
              lost once its lease has passed.
            </p>
          </section>
        </div>
        <section class="card chart-card" aria-labelledby="apps-title">
          <h2 id="apps-title">Apps</h2>
          {apps.state === "loading" && <Loading what="the apps" />}
          {apps.state === "failed" && <Failure error={apps.error} what="the apps" />}
          {apps.state === "ready" && (apps.value.length === 0
            ? <p class="empty">No app has a run queued or running.</p>
            : (
              <table class="stacks" data-testid="apps-table">
                <thead>
                  <tr>
                    <th scope="col">App</th>
                    <th scope="col" class="number">Queued</th>
                    <th scope="col" class="number">Running</th>
                    <th scope="col" class="number">Limit</th>
                    <th scope="col">Waiting for</th>
                  </tr>
                </thead>
                <tbody>
                  {apps.value.map((a) => (
                    <tr key={a.appId} data-app={a.name ?? a.appId}>
                      <td data-label="App">
                        <span>
                          {a.name ?? <code>{shortId(a.appId)}</code>}
                          <span class="help block" title={a.nodeTypes.join(", ")}>{summarize(a.nodeTypes)}</span>
                        </span>
                      </td>
                      <td class="number" data-label="Queued" data-testid="app-queued">{a.queued}</td>
                      <td class="number" data-label="Running" data-testid="app-running">{a.running}</td>
                      <td class="number" data-label="Limit" data-testid="app-limit">{a.concurrency ?? "—"}</td>
                      <td data-label="Waiting for" data-testid="app-waiting">{a.waitingFor ?? "—"}</td>
                    </tr>
                  ))}
                </tbody>
              </table>
            ))}
          <p class="help">
            Every workspace's runs of each app. A queue waits for a worker when no live worker runs all its node types
            (start one with <code>--node-types</code>), or for the app's limit, <code>concurrency</code>{" "}
            in its definition.
          </p>
        </section>
        {backends.state === "failed" && <Failure error={backends.error} what="the backend servers" />}
        {backends.state === "ready" && backends.value.length > 0 && (
          <section class="card" aria-labelledby="backends-title">
            <h2 id="backends-title">Backend servers</h2>
            <table class="stacks" data-testid="backends-table">
              <thead>
                <tr>
                  <th scope="col">Server</th>
                  <th scope="col">State</th>
                  <th scope="col" class="number">Capacity</th>
                  <th scope="col">Runs now</th>
                </tr>
              </thead>
              <tbody>
                {backends.value.map((b) => (
                  <tr key={`${b.kind} ${b.url}`} data-backend={b.url} data-state={b.state}>
                    <td data-label="Server">
                      <span>
                        <code>{b.url}</code>
                        <span class="help block">{KINDS[b.kind] ?? b.kind}</span>
                      </span>
                    </td>
                    <td data-label="State">
                      <span>
                        <span class={`badge ${STATES[b.state]}`}>{b.state}</span>
                        {b.error !== null && <span class="help block">{b.error}</span>}
                        {b.unreachableSince !== null && (
                          <span class="help block" data-testid="backend-since">
                            since {formatTime(b.unreachableSince)}
                          </span>
                        )}
                      </span>
                    </td>
                    <td class="number" data-label="Capacity">{b.capacity}</td>
                    <td data-label="Runs now" data-testid="backend-executions">
                      {b.executions.length === 0
                        ? "—"
                        : b.executions.map((id) => <code key={id} title={id}>{shortId(id)}</code>)}
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
            <p class="help">
              The servers this process runs work on, asked whether they answer at each refresh; one that does not is
              left out of new runs, and probed, until it answers. The runs are this process's own.
            </p>
          </section>
        )}
        <section class="card chart-card" aria-labelledby="throughput-title">
          <h2 id="throughput-title">The last hour</h2>
          {throughput.state === "loading" && <Loading what="the throughput" />}
          {throughput.state === "failed" && <Failure error={throughput.error} what="the throughput" />}
          {throughput.state === "ready" && (
            <>
              <dl class="facts totals" data-testid="throughput-totals">
                <dt>Completed</dt>
                <dd data-testid="completed-total">{throughput.value.completed}</dd>
                <dt>Failed</dt>
                <dd data-testid="failed-total">{throughput.value.failed}</dd>
                <dt>Failure rate</dt>
                <dd data-testid="failure-rate">{percent(throughput.value.failureRate)}</dd>
              </dl>
              <div class="charts">
                <figure>
                  <figcaption>Finished per minute (failed on top)</figcaption>
                  <MinuteChart
                    kind="throughput"
                    minutes={throughput.value.minutes}
                    title={`Finished per minute over the last hour: ${throughput.value.completed} completed, ${throughput.value.failed} failed`}
                  />
                </figure>
                <figure>
                  <figcaption>Failure rate per minute</figcaption>
                  <MinuteChart
                    kind="failures"
                    minutes={throughput.value.minutes}
                    title={`Failure rate over the last hour: ${percent(throughput.value.failureRate)}`}
                  />
                </figure>
              </div>
            </>
          )}
        </section>
        <section aria-labelledby="deliveries-title">
          <h2 id="deliveries-title">Failed webhook deliveries</h2>
          {said !== undefined && (
            <p class={`notice ${said.error ? "error" : ""}`} role={said.error ? "alert" : "status"}>
              {said.text}
            </p>
          )}
          {settings.state === "ready" && !actions && (
            <p class="help">
              Read-only: start <code>appexec serve</code> with <code>--admin-actions</code> to redeliver from here.
            </p>
          )}
          {deliveries.state === "loading" && <Loading what="the deliveries" />}
          {deliveries.state === "failed" && <Failure error={deliveries.error} what="the deliveries" />}
          {deliveries.state === "ready" && (deliveries.value.length === 0
            ? <p class="empty">No failed delivery.</p>
            : (
              <div class="table-scroll">
                <table class="stacks" data-testid="deliveries-table">
                  <thead>
                    <tr>
                      <th scope="col">Run</th>
                      <th scope="col">Workspace</th>
                      <th scope="col">URL</th>
                      <th scope="col">Last attempt</th>
                      <th scope="col" class="number">Attempts</th>
                      {actions && (
                        <th scope="col">
                          <span class="visually-hidden">Action</span>
                        </th>
                      )}
                    </tr>
                  </thead>
                  <tbody>
                    {deliveries.value.map((d) => (
                      <tr key={d.deliveryId} data-execution-id={d.executionId}>
                        <td data-label="Run">
                          <code title={d.executionId}>{shortId(d.executionId)}</code>
                        </td>
                        <td data-label="Workspace">{d.workspaceName ?? <code>{shortId(d.workspaceId)}</code>}</td>
                        <td class="break" data-label="URL">{d.url}</td>
                        <td data-label="Last attempt">
                          <span>
                            {formatTime(d.lastAttemptAt)}
                            <span class="help block">
                              {d.lastError ??
                                (d.lastStatusCode === null ? "No answer." : `Answered ${d.lastStatusCode}.`)}
                            </span>
                          </span>
                        </td>
                        <td class="number" data-label="Attempts">{d.attempts.length}</td>
                        {actions && (
                          <td class="action">
                            <button
                              type="button"
                              onClick={() => redeliver(d.executionId)}
                              disabled={busy !== undefined}
                            >
                              Redeliver
                            </button>
                          </td>
                        )}
                      </tr>
                    ))}
                  </tbody>
                </table>
              </div>
            ))}
        </section>
      </main>
    </div>
  )
}
