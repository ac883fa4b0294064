/**
 * How the views say what is going on: a read in progress, a failure (an endpoint this server
 * does not have is said quietly, as "not available on this server"), the page's title.
 */
import { useEffect } from "preact/hooks"
import { ApiError, isNotAvailable } from "../api/Api.js"

/** A read in progress. */
export const Loading = ({ what }: { readonly what: string }) => (
  <p class="loading" role="status">
    Loading {what}…
  </p>
)

/** The message of a failure, for a person. */
export const messageOf = (error: unknown): string =>
  error instanceof ApiError
    ? error.message
    : error instanceof Error
    ? error.message
    : "Something went wrong."

/**
 * A failed read of `what`: a quiet note when the server has no such endpoint ("`feature` is not
 * available on this server"), else an alert with the server's message.
 */
export const Failure = (
  { error, feature, what }: { readonly error: unknown; readonly what: string; readonly feature?: string }
) =>
  isNotAvailable(error)
    ? (
      <p class="notice quiet" data-testid="not-available">
        {feature ?? `${what[0]?.toUpperCase() ?? ""}${what.slice(1)}`} is not available on this server.
      </p>
    )
    : (
      <p class="notice error" role="alert">
        Could not load {what}: {messageOf(error)}
      </p>
    )

/** Sets the page's title while the view shows. */
export const useTitle = (title: string): void => {
  useEffect(() => {
    document.title = `${title} · appexec console`
  }, [title])
}
