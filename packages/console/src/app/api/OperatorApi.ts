/**
 * The operator views' client of the admin port's endpoints under `/operator`
 * (docs/operations.md#operator-views): same origin, no key (the port is private), JSON out. An
 * answer that is not 2xx becomes an `ApiError` with the error body's code and message, as in
 * the workspace console. An action carries the admin port's anti-forgery token, which the client
 * keeps from the settings it read (`GET /operator`), in `X-Appexec-Action-Token`.
 */
import { ApiError, errorOf, isAbort } from "./Api.js"

/** A workspace's unfinished executions, counted by their leases. */
export interface WorkspaceLoad {
  readonly workspaceId: string
  readonly name: string | null
  /** Those no live worker holds: never claimed, handed back by a stopping worker, or their lease ran out. */
  readonly queued: number
  /** Those a worker holds a live lease on. */
  readonly running: number
}

/** An app with queued or running executions, of every workspace. */
export interface AppQueue {
  readonly appId: string
  /** Its name; null when the app is not stored any more. */
  readonly name: string | null
  readonly workspaceId: string | null
  /** Its runs no live worker holds, as in `WorkspaceLoad`. */
  readonly queued: number
  /** Its runs a worker holds a live lease on. */
  readonly running: number
  /** Its limit (`concurrency` of its current version); null: none. */
  readonly concurrency: number | null
  /** The node types of its current version. */
  readonly nodeTypes: ReadonlyArray<string>
  /** Why its queued executions wait, when no live worker could take them now (`a worker for video.kenburns`). */
  readonly waitingFor: string | null
}

/** The executions finished in one minute. */
export interface Minute {
  readonly at: string
  readonly completed: number
  readonly failed: number
}

/** The last hour's throughput. */
export interface Throughput {
  readonly since: string
  readonly until: string
  readonly completed: number
  readonly failed: number
  readonly failureRate: number | null
  readonly minutes: ReadonlyArray<Minute>
}

/** A worker as its leases show it. */
export interface Worker {
  readonly workerId: string
  readonly held: number
  readonly lastHeartbeatAt: string
  readonly leaseExpiresAt: string
  readonly live: boolean
}

/** A process of the deployment (`serve`, `serve --no-worker`, `worker`, an embedded instance). */
export interface Process {
  readonly processId: string
  readonly name: string
  readonly role: "serve" | "api" | "worker" | "embedded"
  readonly version: string
  readonly startedAt: string
  readonly lastHeartbeatAt: string
  /** It beat within its lease; false: it died, and its row stays until pruned. */
  readonly live: boolean
  /** How many executions it runs now. */
  readonly running: number
  /** The node types its worker runs; null: it runs no worker. */
  readonly nodeTypes: ReadonlyArray<string> | null
}

/** A server outside appexec this process runs work on (a ComfyUI server). */
export interface BackendServer {
  readonly kind: string
  /** Its root URL, without credentials. */
  readonly url: string
  /** `unreachable` while held down or when it did not answer just now, `busy` while it runs work of this process, else `idle`. */
  readonly state: "busy" | "idle" | "unreachable"
  /** How many runs of this process it takes at once. */
  readonly capacity: number
  /** The executions it runs for this process now. */
  readonly executions: ReadonlyArray<string>
  /** Why it is unreachable. */
  readonly error: string | null
  /** Since when (ISO 8601) it is held down, new runs going to the other servers; null when it is not. */
  readonly unreachableSince: string | null
}

/** A failed webhook delivery. */
export interface FailedDelivery {
  readonly deliveryId: string
  readonly executionId: string
  readonly workspaceId: string
  readonly workspaceName: string | null
  readonly appId: string
  readonly url: string
  readonly createdAt: string
  readonly lastAttemptAt: string | null
  readonly lastStatusCode: number | null
  readonly lastError: string | null
  readonly attempts: ReadonlyArray<
    { readonly at: string; readonly statusCode: number | null; readonly error: string | null }
  >
}

/** What the admin app allows; with actions, the token an action carries. */
export interface Settings {
  readonly actions: boolean
  readonly actionToken?: string
}

/** The client. */
export interface OperatorApi {
  readonly settings: (signal?: AbortSignal) => Promise<Settings>
  readonly workspaces: (signal?: AbortSignal) => Promise<ReadonlyArray<WorkspaceLoad>>
  readonly apps: (signal?: AbortSignal) => Promise<ReadonlyArray<AppQueue>>
  readonly throughput: (signal?: AbortSignal) => Promise<Throughput>
  readonly workers: (signal?: AbortSignal) => Promise<ReadonlyArray<Worker>>
  readonly processes: (signal?: AbortSignal) => Promise<ReadonlyArray<Process>>
  readonly backends: (signal?: AbortSignal) => Promise<ReadonlyArray<BackendServer>>
  readonly deliveries: (signal?: AbortSignal) => Promise<ReadonlyArray<FailedDelivery>>
  /** One more attempt of the webhook of `executionId`. */
  readonly redeliver: (executionId: string) => Promise<void>
}

/** The client of the admin port under `basePath` of the page's origin. */
export const makeOperatorApi = (basePath: string): OperatorApi => {
  let actionToken: string | undefined
  const call = async <A>(
    method: string,
    path: string,
    signal?: AbortSignal,
    headers: Readonly<Record<string, string>> = {}
  ): Promise<A> => {
    let response: Response
    try {
      response = await fetch(`${basePath}/operator${path}`, {
        method,
        headers: { accept: "application/json", ...headers },
        cache: "no-store",
        credentials: "omit",
        ...(signal === undefined ? {} : { signal })
      })
    } catch (error) {
      if (isAbort(error)) throw error
      throw new ApiError(0, "network", "The admin port could not be reached. Is appexec still running?")
    }
    if (response.status >= 400) throw await errorOf(response, "The admin port")
    return ((await response.json()) as { readonly data: A }).data
  }
  return {
    settings: async (signal) => {
      const settings = await call<Settings>("GET", "", signal)
      actionToken = settings.actionToken
      return settings
    },
    workspaces: (signal) => call("GET", "/workspaces", signal),
    apps: (signal) => call("GET", "/apps", signal),
    throughput: (signal) => call("GET", "/throughput", signal),
    workers: (signal) => call("GET", "/workers", signal),
    processes: (signal) => call("GET", "/processes", signal),
    backends: (signal) => call("GET", "/backends", signal),
    deliveries: (signal) => call("GET", "/deliveries", signal),
    redeliver: async (executionId) => {
      actionToken ??= (await call<Settings>("GET", "")).actionToken
      await call(
        "POST",
        `/executions/${encodeURIComponent(executionId)}/webhook/redeliver`,
        undefined,
        actionToken === undefined ? {} : { "x-appexec-action-token": actionToken }
      )
    }
  }
}
