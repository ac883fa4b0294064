/**
 * The console's client of the public API: `fetch` on the page's own origin under the base path,
 * the key sent as `x-api-key` (never in a URL), JSON in and out. An answer that is not 2xx
 * becomes an `ApiError` with the error body's code and message. A 401 on any call signs the
 * person out (`onRefused`), so a revoked key ends the session on its next call.
 */
import * as UploadRequest from "./UploadRequest.js"
import type {
  AppDetail,
  AppSummary,
  ExecutionPage,
  ExecutionStatus,
  ExecutionView,
  LogLine,
  StartedExecution,
  Uploaded,
  WebhookDelivery,
  WebhookEvent,
  WorkflowGraph
} from "./Wire.js"

/** One problem of an `invalid_inputs` answer. */
export interface InputProblem {
  readonly parameter: string
  readonly problem: string
  readonly expected?: ReadonlyArray<string>
}

/** An answer that is not 2xx, or no answer at all (`status` 0). */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly details: ReadonlyArray<unknown> = []
  ) {
    super(message)
  }

  /** The problems of an `invalid_inputs` answer. */
  get problems(): ReadonlyArray<InputProblem> {
    return this.code === "invalid_inputs" ? this.details.filter(isInputProblem) : []
  }
}

const isInputProblem = (detail: unknown): detail is InputProblem =>
  typeof detail === "object" && detail !== null && "parameter" in detail && typeof detail.parameter === "string" &&
  "problem" in detail && typeof detail.problem === "string"

/**
 * Whether the server has no such endpoint: the 404 of a path outside its route table (an older
 * server, or an endpoint of the console's that is not there yet), not of a missing resource.
 */
export const isNotAvailable = (error: unknown): boolean =>
  error instanceof ApiError && error.status === 404 && error.message.startsWith("No endpoint ")

/** Whether a request was aborted by its signal. */
export const isAbort = (error: unknown): boolean => error instanceof DOMException && error.name === "AbortError"

/** The message of a request that got no answer. */
const UNREACHABLE = "The server could not be reached. Check your connection and try again."

/** The message that signs a person out after a 401. */
export const REFUSED = "Your key was refused: sign in again"

/**
 * The `ApiError` of an answer of `status` whose body is `text`, read leniently: its code, message
 * and details when it has them, else a message saying that `answerer` answered the status.
 */
export const errorOfText = (status: number, text: string, answerer = "The server"): ApiError => {
  const fallback = `${answerer} answered ${status}.`
  try {
    const body: unknown = JSON.parse(text)
    if (typeof body === "object" && body !== null && "error" in body) {
      const error = body.error
      if (typeof error === "object" && error !== null) {
        const code = "code" in error && typeof error.code === "string" ? error.code : "unknown"
        const message = "message" in error && typeof error.message === "string" ? error.message : fallback
        const details = "details" in error && Array.isArray(error.details) ? error.details : []
        return new ApiError(status, code, message, details)
      }
    }
  } catch {
    // Not JSON: a proxy's page, say.
  }
  return new ApiError(status, "unknown", fallback)
}

/** The `ApiError` of an answer that is not 2xx (`errorOfText` of its body). */
export const errorOf = async (response: Response, answerer = "The server"): Promise<ApiError> =>
  errorOfText(response.status, await response.text().catch(() => ""), answerer)

/** A request's options. */
export interface RequestOptions {
  readonly query?: Readonly<Record<string, string | number | undefined>>
  readonly body?: unknown
  readonly headers?: Readonly<Record<string, string>>
  readonly signal?: AbortSignal | undefined
}

/** A poll of an execution: its new state, or none when it did not change (`If-None-Match`). */
export interface Polled {
  readonly execution: ExecutionView | undefined
  readonly etag: string | undefined
  /** Whether the server held the request (`Preference-Applied`): the next one may go at once. */
  readonly held: boolean
}

/** The client, over one key. */
export interface Api {
  /** The base path of the API, e.g. `""` or `/api`; its endpoints are under `<basePath>/v1`. */
  readonly basePath: string
  /** The key, for the snippets the console shows (never put in a URL). */
  readonly key: string
  /** A raw request to `<basePath><path>` with the key; refusals handled, statuses left to the caller. */
  readonly fetch: (path: string, init: RequestInit) => Promise<Response>
  readonly apps: {
    readonly list: (search: string, signal?: AbortSignal) => Promise<ReadonlyArray<AppSummary>>
    readonly get: (appId: string, signal?: AbortSignal) => Promise<AppDetail>
    readonly workflow: (appId: string, signal?: AbortSignal) => Promise<WorkflowGraph>
  }
  readonly executions: {
    readonly start: (
      appId: string,
      inputs: Readonly<Record<string, string>>,
      options?: {
        readonly webhook?: string | undefined
        readonly webhookEvents?: ReadonlyArray<WebhookEvent> | undefined
        /** -10 to 10 (docs/scaling.md#priorities); not sent when undefined. */
        readonly priority?: number | undefined
      }
    ) => Promise<StartedExecution>
    readonly get: (executionId: string, signal?: AbortSignal) => Promise<ExecutionView>
    /** `GET` held until the execution changes from `etag`, or `waitSeconds` pass. */
    readonly poll: (
      executionId: string,
      options: { readonly etag?: string | undefined; readonly waitSeconds: number; readonly signal?: AbortSignal }
    ) => Promise<Polled>
    readonly list: (
      filter: {
        readonly status?: ExecutionStatus | undefined
        readonly appId?: string | undefined
        readonly limit?: number
        readonly cursor?: string | undefined
      },
      signal?: AbortSignal
    ) => Promise<ExecutionPage>
    readonly logs: (executionId: string, signal?: AbortSignal) => Promise<ReadonlyArray<LogLine>>
    readonly webhook: (executionId: string, signal?: AbortSignal) => Promise<WebhookDelivery | null>
    readonly cancel: (executionId: string) => Promise<ExecutionView>
    /**
     * A new attempt of a finished run's webhook, or of one of its deliveries (`deliveryId`): the
     * delivery, `pending` again.
     */
    readonly redeliver: (executionId: string, deliveryId?: string) => Promise<WebhookDelivery>
  }
  readonly uploads: {
    /**
     * `POST /v1/uploads` of `file`'s bytes as its type: the stored upload. `onProgress` hears the
     * bytes sent; a 429 is sent again after its `Retry-After` (of a few seconds, up to 3 times).
     */
    readonly create: (
      file: Blob,
      options: { readonly onProgress: (sent: number, total: number) => void; readonly signal?: AbortSignal }
    ) => Promise<Uploaded>
  }
}

/** How often a 429 upload is sent again, and the longest `Retry-After` waited for. */
const UPLOAD_RETRIES = 3
const UPLOAD_RETRY_MAX_SECONDS = 5

/** Waits `ms`, or rejects with an `AbortError` when `signal` aborts first. */
const pause = (ms: number, signal: AbortSignal | undefined) =>
  new Promise<void>((resolve, reject) => {
    const timer = setTimeout(resolve, ms)
    signal?.addEventListener("abort", () => {
      clearTimeout(timer)
      reject(new DOMException("The upload was canceled.", "AbortError"))
    }, { once: true })
  })

const queryString = (query: RequestOptions["query"]) => {
  const params = new URLSearchParams()
  for (const [name, value] of Object.entries(query ?? {})) {
    if (value !== undefined && value !== "") params.set(name, String(value))
  }
  const text = params.toString()
  return text === "" ? "" : `?${text}`
}

/** Reads `{ data }` of a JSON answer. */
const dataOf = async <A>(response: Response): Promise<A> => {
  const body = (await response.json()) as { readonly data: A }
  return body.data
}

/**
 * The client for `key` at `basePath` of the page's origin. `onRefused` runs on every 401: the
 * console signs out with `REFUSED`.
 */
export const makeApi = (basePath: string, key: string, onRefused: () => void): Api => {
  const raw = async (path: string, init: RequestInit): Promise<Response> => {
    const headers = new Headers(init.headers)
    headers.set("x-api-key", key)
    let response: Response
    try {
      response = await fetch(`${basePath}${path}`, { ...init, headers, cache: "no-store", credentials: "omit" })
    } catch (error) {
      if (isAbort(error)) throw error
      throw new ApiError(0, "network", UNREACHABLE)
    }
    if (response.status === 401) {
      onRefused()
      throw new ApiError(401, "unauthorized", REFUSED)
    }
    return response
  }

  const request = async (method: string, path: string, options: RequestOptions = {}): Promise<Response> => {
    const headers: Record<string, string> = { accept: "application/json", ...options.headers }
    if (options.body !== undefined) headers["content-type"] = "application/json"
    const response = await raw(`${path}${queryString(options.query)}`, {
      method,
      headers,
      ...(options.body === undefined ? {} : { body: JSON.stringify(options.body) }),
      ...(options.signal === undefined ? {} : { signal: options.signal })
    })
    if (response.status >= 400) throw await errorOf(response)
    return response
  }

  const execution = (id: string) => `/v1/executions/${encodeURIComponent(id)}`

  return {
    basePath,
    key,
    fetch: raw,
    apps: {
      list: async (search, signal) =>
        dataOf(await request("GET", "/v1/apps", { query: { search: search.trim(), limit: 100 }, signal })),
      get: async (appId, signal) => dataOf(await request("GET", `/v1/apps/${encodeURIComponent(appId)}`, { signal })),
      workflow: async (appId, signal) =>
        dataOf(await request("GET", `/v1/apps/${encodeURIComponent(appId)}/workflow`, { signal }))
    },
    executions: {
      start: async (appId, inputs, { priority, webhook, webhookEvents } = {}) =>
        dataOf(
          await request("POST", `/v1/apps/${encodeURIComponent(appId)}/executions`, {
            query: { webhook },
            body: {
              inputs,
              ...(webhookEvents === undefined ? {} : { webhookEvents }),
              ...(priority === undefined ? {} : { priority })
            }
          })
        ),
      get: async (id, signal) => dataOf(await request("GET", execution(id), { signal })),
      poll: async (id, { etag, signal, waitSeconds }) => {
        const response = await request("GET", execution(id), {
          headers: { prefer: `wait=${waitSeconds}`, ...(etag === undefined ? {} : { "if-none-match": etag }) },
          signal
        })
        const held = response.headers.has("preference-applied")
        const next = response.headers.get("etag") ?? undefined
        if (response.status === 304) return { execution: undefined, etag, held }
        return { execution: await dataOf<ExecutionView>(response), etag: next, held }
      },
      list: async (filter, signal) => {
        const response = await request("GET", "/v1/executions", {
          query: { status: filter.status, appId: filter.appId, limit: filter.limit, cursor: filter.cursor },
          signal
        })
        return (await response.json()) as ExecutionPage
      },
      logs: async (id, signal) => dataOf(await request("GET", `${execution(id)}/logs`, { signal })),
      webhook: async (id, signal) => dataOf(await request("GET", `${execution(id)}/webhook`, { signal })),
      cancel: async (id) => dataOf(await request("POST", `${execution(id)}/cancel`)),
      redeliver: async (id, delivery) =>
        dataOf(await request("POST", `${execution(id)}/webhook/redeliver`, { query: { delivery } }))
    },
    uploads: {
      create: async (file, { onProgress, signal }) => {
        const headers = {
          accept: "application/json",
          "content-type": file.type === "" ? "application/octet-stream" : file.type,
          "x-api-key": key
        }
        for (let attempt = 0;; attempt++) {
          const answer = await UploadRequest.send(`${basePath}/v1/uploads`, headers, file, onProgress, signal)
          if (answer.status === 0) {
            throw new ApiError(0, "network", UNREACHABLE)
          }
          if (answer.status === 401) {
            onRefused()
            throw new ApiError(401, "unauthorized", REFUSED)
          }
          const wait = Number(answer.retryAfter ?? "1")
          if (answer.status === 429 && attempt < UPLOAD_RETRIES && wait <= UPLOAD_RETRY_MAX_SECONDS) {
            await pause(Math.max(wait, 0) * 1000, signal)
            continue
          }
          if (answer.status >= 400 || answer.status < 200) throw errorOfText(answer.status, answer.text)
          const body = JSON.parse(answer.text) as { readonly data: Uploaded }
          return body.data
        }
      }
    }
  }
}
