/**
 * The frame of a signed-in console: a header with the product's name, a hint of the key in use
 * and "Sign out"; a navigation with Apps and Runs (at the left, on top on a narrow screen); the
 * view in the main region.
 */
import type { ComponentChildren } from "preact"
import { useEffect, useRef } from "preact/hooks"
import { Link, useNavigation } from "./Router.js"

/** The frame around `children`. */
export const Shell = (
  { children, keyHint, onSignOut }: {
    readonly children: ComponentChildren
    readonly keyHint: string
    readonly onSignOut: () => void
  }
) => {
  const { route } = useNavigation()
  const main = useRef<HTMLElement>(null)
  const first = useRef(true)
  // After a move inside the page, focus goes to the new view, as after a page load.
  useEffect(() => {
    if (first.current) first.current = false
    else main.current?.focus({ preventScroll: true })
  }, [route])
  const inApps = route.name === "apps" || route.name === "app"
  const inRuns = route.name === "runs" || route.name === "run"
  return (
    <div class="shell">
      <a class="skip" href="#main">
        Skip to content
      </a>
      <header class="top">
        <Link to={{ name: "apps" }} className="brand">
          appexec console
        </Link>
        <div class="session">
          <span class="key-hint" title="The API key this tab is signed in with" data-testid="key-hint">
            Key <code>{keyHint}</code>
          </span>
          <button type="button" class="quiet" onClick={onSignOut}>
            Sign out
          </button>
        </div>
      </header>
      <nav class="side" aria-label="Main">
        <ul>
          <li>
            <Link to={{ name: "apps" }} current={inApps}>
              Apps
            </Link>
          </li>
          <li>
            <Link to={{ name: "runs" }} current={inRuns}>
              Runs
            </Link>
          </li>
        </ul>
      </nav>
      <main id="main" tabIndex={-1} ref={main}>
        {children}
      </main>
    </div>
  )
}
