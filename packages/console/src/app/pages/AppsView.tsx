/**
 * The apps the key can run (`GET /v1/apps?search=`): the workspace's own first, then public
 * ones, each with its description; a search box narrows them as one types.
 */
import { useEffect, useState } from "preact/hooks"
import { useApi, useRemote } from "../api/Remote.js"
import { Failure, Loading, useTitle } from "../components/Feedback.js"
import { Link } from "../Router.js"

/** How long typing pauses before the search is sent. */
const SEARCH_DELAY_MS = 250

/** The view. */
export const AppsView = () => {
  useTitle("Apps")
  const api = useApi()
  const [typed, setTyped] = useState("")
  const [search, setSearch] = useState("")
  useEffect(() => {
    const timer = setTimeout(() => setSearch(typed), SEARCH_DELAY_MS)
    return () => clearTimeout(timer)
  }, [typed])
  const [apps] = useRemote((signal) => api.apps.list(search, signal), [search])

  return (
    <section>
      <h1>Apps</h1>
      <form class="toolbar" role="search" onSubmit={(event) => (event.preventDefault(), setSearch(typed))}>
        <label for="app-search">Search apps</label>
        <input
          id="app-search"
          type="search"
          value={typed}
          placeholder="Name or description"
          onInput={(event) => setTyped(event.currentTarget.value)}
        />
      </form>
      {apps.state === "loading" && <Loading what="the apps" />}
      {apps.state === "failed" && <Failure error={apps.error} what="the apps" />}
      {apps.state === "ready" && apps.value.length === 0 && (
        <p class="empty">{search.trim() === "" ? "No app can be run with this key yet." : "No app matches."}</p>
      )}
      {apps.state === "ready" && apps.value.length > 0 && (
        <ul class="cards" aria-label="Apps">
          {apps.value.map((app) => (
            <li key={app.appId} class="card app-card">
              <h2>
                <Link to={{ name: "app", appId: app.appId }}>{app.name}</Link>
              </h2>
              <p class="description">{app.description ?? "No description."}</p>
              <p class="meta">
                <span class={`badge ${app.isPublic ? "public" : "private"}`}>
                  {app.isPublic ? "Public" : "This workspace"}
                </span>
              </p>
            </li>
          ))}
        </ul>
      )}
    </section>
  )
}
