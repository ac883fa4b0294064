/**
 * What can be done with a run from its page: "Cancel" while it is queued or running
 * (`POST /v1/executions/{id}/cancel`), and "Run again", which opens its app's form prefilled with
 * the run's inputs, to edit and run.
 */
import { useState } from "preact/hooks"
import { ApiError } from "../../api/Api.js"
import { type Remote, useApi } from "../../api/Remote.js"
import { type AppDetail, type ExecutionView, isFinished } from "../../api/Wire.js"
import { Failure, Loading, messageOf } from "../../components/Feedback.js"
import { RunForm } from "../../form/RunForm.js"
import { useNavigation } from "../../Router.js"
import type { FollowedRun } from "./FollowedRun.js"

/** What a cancel's answer says, until the run ends (its error then says it was canceled). */
const CANCEL_REQUESTED = "Cancel requested."

/** The buttons of `execution`, and the form "Run again" opens; `app` is the run's app as read. */
export const RunActions = (
  { app, execution, setExecution }: {
    readonly execution: ExecutionView
    readonly setExecution: FollowedRun["setExecution"]
    readonly app: Remote<AppDetail | undefined>
  }
) => {
  const api = useApi()
  const navigation = useNavigation()
  const [againOpen, setAgainOpen] = useState(false)
  const [said, setSaid] = useState<{ readonly text: string; readonly error: boolean } | undefined>(undefined)
  const [busy, setBusy] = useState(false)
  const finished = isFinished(execution.status)
  const { appId, executionId } = execution

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
        api.executions.get(executionId).then((current) => setExecution(() => current), () => {})
      }
    } finally {
      setBusy(false)
    }
  }

  return (
    <>
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
    </>
  )
}
