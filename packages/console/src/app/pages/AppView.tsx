/**
 * An app's page (`GET /v1/apps/{appId}` and `/workflow`): its description, its form with "Run"
 * (the run's page opens once it started), the same request as curl and as client code with copy
 * buttons, and its workflow as a diagram.
 */
import { useApi, useRemote } from "../api/Remote.js"
import { CopyButton } from "../components/CopyButton.js"
import { Failure, Loading, useTitle } from "../components/Feedback.js"
import { WorkflowDiagram } from "../diagram/WorkflowDiagram.js"
import { RunForm } from "../form/RunForm.js"
import * as Snippets from "../form/Snippets.js"
import { Link, useNavigation } from "../Router.js"

/** Where the API answers, as a consumer's program would name it. */
export const baseUrlOf = (basePath: string) => `${location.origin}${basePath}`

/** The view of `appId`. */
export const AppView = ({ appId }: { readonly appId: string }) => {
  const api = useApi()
  const navigation = useNavigation()
  const [app] = useRemote((signal) => api.apps.get(appId, signal), [appId])
  const [graph] = useRemote((signal) => api.apps.workflow(appId, signal), [appId])
  useTitle(app.state === "ready" ? app.value.name : "App")

  if (app.state === "loading") return <Loading what="the app" />
  if (app.state === "failed") {
    return (
      <section>
        <h1>App</h1>
        <Failure error={app.error} what="this app" />
        <p>
          <Link to={{ name: "apps" }}>Back to the apps</Link>
        </p>
      </section>
    )
  }
  const detail = app.value
  return (
    <section class="app-view">
      <p class="crumbs">
        <Link to={{ name: "apps" }}>Apps</Link> /
      </p>
      <h1>{detail.name}</h1>
      <p class="description">{detail.description === "" ? "No description." : detail.description}</p>
      <div class="stack app-columns">
        <section class="card form-card" aria-labelledby="run-title">
          <h2 id="run-title">Inputs</h2>
          <RunForm
            app={detail}
            testId="run-form"
            onStarted={(executionId) => navigation.go({ name: "run", executionId })}
          >
            {(request) => {
              const start = { baseUrl: baseUrlOf(api.basePath), appId: detail.appId, ...request }
              const curl = Snippets.curl(start)
              const code = Snippets.clientCode(start)
              return (
                <div class="snippets">
                  <div class="actions">
                    <CopyButton label="Copy as curl" text={curl} />
                    <CopyButton label="Copy as client code" text={code} />
                  </div>
                  <details>
                    <summary>The request as code</summary>
                    <p class="help">
                      Both read the key from <code>APPEXEC_API_KEY</code>.
                    </p>
                    <pre class="code" data-testid="curl-snippet">{curl}</pre>
                    <pre class="code" data-testid="client-snippet">{code}</pre>
                  </details>
                </div>
              )
            }}
          </RunForm>
        </section>
        <section class="card" aria-labelledby="workflow-title">
          <h2 id="workflow-title">Workflow</h2>
          {graph.state === "loading" && <Loading what="the workflow" />}
          {graph.state === "failed" && <Failure error={graph.error} what="the workflow" />}
          {graph.state === "ready" && <WorkflowDiagram graph={graph.value} />}
        </section>
      </div>
    </section>
  )
}
