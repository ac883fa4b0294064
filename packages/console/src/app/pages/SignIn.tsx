/**
 * The sign-in view: a field labelled "API key" and a "Sign in" button. The key is tried on the
 * API (`GET /v1/apps`) before it is kept, so a wrong one is said at once.
 */
import { useState } from "preact/hooks"
import { ApiError, makeApi } from "../api/Api.js"
import { messageOf, useTitle } from "../components/Feedback.js"

/** The view; `onSignIn` gets the key once the API accepted it. */
export const SignIn = (
  { basePath, notice, onSignIn }: {
    readonly basePath: string
    /** Why the person is here again: a refused key, a sign-out. */
    readonly notice: string | undefined
    readonly onSignIn: (key: string) => void
  }
) => {
  useTitle("Sign in")
  const [key, setKey] = useState("")
  const [busy, setBusy] = useState(false)
  const [error, setError] = useState<string | undefined>(undefined)
  const submit = async (event: Event) => {
    event.preventDefault()
    const typed = key.trim()
    if (typed === "") return setError("Enter an API key.")
    setBusy(true)
    setError(undefined)
    try {
      await makeApi(basePath, typed, () => {}).apps.list("")
      onSignIn(typed)
    } catch (failure) {
      setError(
        failure instanceof ApiError && failure.status === 401
          ? "This key was refused. Check it and try again."
          : messageOf(failure)
      )
      setBusy(false)
    }
  }
  return (
    <main class="sign-in" id="main">
      <form class="card sign-in-card" onSubmit={submit} aria-labelledby="sign-in-title">
        <p class="brand">appexec console</p>
        <h1 id="sign-in-title">Sign in</h1>
        {notice !== undefined && error === undefined && (
          <p class="notice" role="status">
            {notice}
          </p>
        )}
        <label for="api-key">API key</label>
        <input
          id="api-key"
          name="api-key"
          type="password"
          autocomplete="off"
          spellcheck={false}
          value={key}
          onInput={(event) => setKey(event.currentTarget.value)}
          aria-describedby="api-key-help"
          aria-invalid={error === undefined ? undefined : true}
        />
        <p class="help" id="api-key-help">
          A workspace key (<code>aex_…</code>), as <code>appexec serve</code> printed it or{" "}
          <code>appexec keys create</code> made it. It is kept in this tab only, until you sign out or close it.
        </p>
        {error !== undefined && (
          <p class="notice error" role="alert">
            {error}
          </p>
        )}
        <button type="submit" class="primary" disabled={busy}>
          Sign in
        </button>
      </form>
    </main>
  )
}
