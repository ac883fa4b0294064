/**
 * The servers outside appexec on which node types run their work (the ComfyUI servers of
 * `@appexec/nodes-comfyui`), as the operator views show them (docs/operations.md#backend-servers):
 * each server's address, whether it answers, how many runs of this process it takes at once, and
 * the executions it runs for this process now. The node package that owns the servers provides the
 * port; an instance without such servers has none, and the views show none.
 */
import { Context, type Effect } from "effect"

/** How a server is now: running work of this process, free, or not answering. */
export type BackendState = "busy" | "idle" | "unreachable"

/** One server as the operator views show it. */
export interface BackendServer {
  /** Which kind of server it is, such as `comfyui`. */
  readonly kind: string
  /** Its root URL, never with credentials (no user or password, no query). */
  readonly url: string
  /**
   * `unreachable` while the node package holds it down, or when it did not answer just now (also
   * while runs hold it), else `busy` while it runs work of this process, else `idle`.
   */
  readonly state: BackendState
  /** How many runs of this process it takes at once. */
  readonly capacity: number
  /** The executions it runs for this process now. */
  readonly executions: ReadonlyArray<string>
  /** Why it is `unreachable`; null otherwise. */
  readonly error: string | null
  /** Since when (ISO 8601) it is held down, left out of new runs until it answers; null when it is not. */
  readonly unreachableSince: string | null
}

/** The backend servers of this process. */
export class BackendServers extends Context.Tag("@appexec/core/BackendServers")<BackendServers, {
  /** Each server now (asked whether it answers at this call), in the order configured; never fails. */
  readonly list: Effect.Effect<ReadonlyArray<BackendServer>>
}>() {}

/** A server URL as the views may show it: without user, password, query or fragment. */
export const shownUrl = (url: string): string => {
  if (!URL.canParse(url)) return url.replace(/^([a-z][a-z0-9+.-]*:\/\/)[^@/]*@/i, "$1").replace(/[?#].*$/, "")
  const parsed = new URL(url)
  return `${parsed.origin}${parsed.pathname.replace(/\/+$/, "")}`
}
