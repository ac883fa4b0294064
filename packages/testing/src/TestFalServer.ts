/**
 * A local server that speaks fal's queue API, for tests of `provider.fal`: an HTTP server on
 * 127.0.0.1 (port 0) with the routes and shapes of fal's queue reference
 * (https://fal.ai/docs/model-endpoints/queue): `POST /{model}` queues a request and answers
 * `request_id`, `response_url`, `status_url`, `cancel_url` (on the model's app, `owner/name`,
 * without its endpoint path, as fal builds them); `GET …/requests/{id}/status` answers
 * `IN_QUEUE` (with `queue_position`), `IN_PROGRESS`, then `COMPLETED` after `steps` reads;
 * `GET …/requests/{id}` answers the result, or for a failed request the error answer fal keeps
 * (422 with a validation `detail` list, or 5xx with `X-Fal-Error-Type`); `PUT …/requests/{id}/cancel`
 * answers 202 `CANCELLATION_REQUESTED` (400 `ALREADY_COMPLETED` once completed). Result files are
 * served at `GET /files/<n>`.
 *
 * With a `key`, a request without `Authorization: Key <key>` is answered 401, echoing what it
 * got. A test scripts the answers to the next API requests (`script`), or `"reset"`.
 */
import { Effect, type Scope } from "effect"
import type { IncomingHttpHeaders } from "node:http"
import * as LocalServer from "./internal/LocalServer.js"

/** One request as the server got it. */
export type Received = LocalServer.Received

/** A scripted answer: a status with optional headers and body, or `"reset"`. */
export type Scripted =
  | { readonly status: number; readonly headers?: Readonly<Record<string, string>>; readonly body?: unknown }
  | "reset"

/** What the model does with an input: its result (`"$file0"` is the URL of its first file) or a kept error answer. */
export type Outcome =
  | { readonly result: unknown; readonly files?: ReadonlyArray<{ contentType: string; bytes: Uint8Array }> }
  | { readonly status: number; readonly errorType?: string; readonly detail: unknown }

/** The options of the server. */
export interface Options {
  /** The key it demands (none: no check). */
  readonly key?: string
  /** Status reads before a request is `COMPLETED` (the first is `IN_QUEUE`, then `IN_PROGRESS`). */
  readonly steps?: number
  /** The model; default: `{ images: [{ url: "$file0", content_type: "image/png" }] }` with `image`. */
  readonly model?: (input: unknown) => Outcome
  readonly image?: Uint8Array
}

/** A request as the server keeps it. */
export interface QueuedRequest {
  readonly id: string
  readonly app: string
  readonly input: unknown
  status: "IN_QUEUE" | "IN_PROGRESS" | "COMPLETED"
  reads: number
  cancelRequested: boolean
  readonly outcome: Outcome
}

/** A running server. */
export interface TestFalServer {
  /** The queue root: `http://127.0.0.1:<port>`. */
  readonly baseUrl: string
  readonly host: string
  readonly received: ReadonlyArray<Received>
  /** The next request not yet taken; fails after 5 s rather than hang the test. */
  readonly next: Effect.Effect<Received, Error>
  readonly requests: ReadonlyMap<string, QueuedRequest>
  /** Ids of the requests a cancel reached, in order. */
  readonly canceled: ReadonlyArray<string>
  readonly script: (...answers: ReadonlyArray<Scripted>) => void
  /** Answers every held request as if it had not been held. */
  readonly release: Effect.Effect<void>
}

/** Starts a server; it stops with the scope, open connections included. */
export const start = (options: Options = {}): Effect.Effect<TestFalServer, never, Scope.Scope> =>
  Effect.gen(function*() {
    const requests = new Map<string, QueuedRequest>()
    const canceled: Array<string> = []
    let base = ""
    const files = LocalServer.makeFiles(() => base, { objects: true })
    let counter = 0
    const steps = options.steps ?? 2

    const outcomeOf = (input: unknown): Outcome => {
      if (options.model !== undefined) return options.model(input)
      const image = options.image ?? LocalServer.pngBytes
      return {
        result: { images: [{ url: "$file0", content_type: "image/png" }], seed: 42 },
        files: [{ contentType: "image/png", bytes: image }]
      }
    }

    const urls = (r: QueuedRequest) => ({
      response_url: `${base}/${r.app}/requests/${r.id}`,
      status_url: `${base}/${r.app}/requests/${r.id}/status`,
      cancel_url: `${base}/${r.app}/requests/${r.id}/cancel`
    })

    const normal = (method: string, path: string, headers: IncomingHttpHeaders, json: unknown) => {
      if (options.key !== undefined && headers["authorization"] !== `Key ${options.key}`) {
        return { status: 401, body: { detail: `Invalid credentials: '${String(headers["authorization"] ?? "")}'` } }
      }
      const queued = /^\/([^/]+\/[^/]+)\/requests\/([^/]+)(\/status|\/cancel)?$/.exec(path.split("?")[0]!)
      if (queued !== null) {
        const r = requests.get(queued[2]!)
        if (r === undefined || r.app !== queued[1]) return { status: 404, body: { detail: "Request not found" } }
        if (queued[3] === "/status" && method === "GET") {
          r.reads += 1
          if (r.status !== "COMPLETED") {
            r.status = r.reads >= steps
              ? "COMPLETED"
              : r.reads === 1
              ? "IN_QUEUE"
              : "IN_PROGRESS"
          }
          return {
            status: r.status === "COMPLETED" ? 200 : 202,
            body: {
              status: r.status,
              ...(r.status === "IN_QUEUE" ? { queue_position: 0 } : {}),
              ...urls(r),
              logs: null
            }
          }
        }
        if (queued[3] === "/cancel" && method === "PUT") {
          canceled.push(r.id)
          if (r.status === "COMPLETED") return { status: 400, body: { status: "ALREADY_COMPLETED" } }
          r.cancelRequested = true
          return { status: 202, body: { status: "CANCELLATION_REQUESTED" } }
        }
        if (queued[3] === undefined && method === "GET") {
          if (r.status !== "COMPLETED") return { status: 400, body: { detail: "Request is still in progress" } }
          if ("result" in r.outcome) return { status: 200, body: r.outcome.result }
          return {
            status: r.outcome.status,
            headers: r.outcome.errorType === undefined ? {} : { "x-fal-error-type": r.outcome.errorType },
            body: {
              detail: r.outcome.detail,
              ...(r.outcome.errorType === undefined ? {} : { error_type: r.outcome.errorType })
            }
          }
        }
        return { status: 405, body: { detail: "Method not allowed" } }
      }
      if (method === "POST" && /^\/[^/]+\/[^/]+(\/[^/]+)*$/.test(path)) {
        if (json === null || typeof json !== "object" || Array.isArray(json)) {
          return {
            status: 422,
            body: { detail: [{ loc: ["body"], msg: "Input should be an object", type: "dict_type" }] }
          }
        }
        counter += 1
        const given = outcomeOf(json)
        let outcome = given
        if ("result" in given && given.files !== undefined) {
          outcome = { result: files.keep(given.files)(given.result) }
        }
        const r: QueuedRequest = {
          id: `req-${String(counter).padStart(4, "0")}`,
          app: path.slice(1).split("/").slice(0, 2).join("/"),
          input: json,
          status: "IN_QUEUE",
          reads: 0,
          cancelRequested: false,
          outcome
        }
        requests.set(r.id, r)
        return { status: 200, body: { request_id: r.id, ...urls(r), queue_position: 0 } }
      }
      return { status: 404, body: { detail: `No route for ${method} ${path}` } }
    }

    const served = yield* LocalServer.serveScripted(files, normal)
    base = served.baseUrl
    return { ...served, requests, canceled }
  })
