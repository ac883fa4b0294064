/**
 * A local server that speaks Replicate's predictions API, for tests of `provider.replicate`: an
 * HTTP server on 127.0.0.1 (port 0) with the routes and shapes of Replicate's HTTP reference
 * (https://replicate.com/docs/reference/http): `POST /v1/models/{owner}/{name}/predictions`
 * (`{ input }`) and `POST /v1/predictions` (`{ version, input }`) create a prediction (201, with
 * `urls.get` and `urls.cancel`); `GET /v1/predictions/{id}` reads it, each read moving it on
 * (`starting` → `processing` → `succeeded` after `steps` reads, or `failed` with the model's
 * error); `POST /v1/predictions/{id}/cancel` cancels it. `Prefer: wait` on the create answers a
 * prediction that needs no steps already finished. Output files are served at `GET /files/<n>`.
 *
 * With a `token`, a request without `Authorization: Bearer <token>` is answered 401 with a body
 * that echoes the credential it got. A test scripts the answers to the next API requests
 * (`script`): a status with headers and body (429 with `Retry-After`, 503), `"reset"`, or
 * `"hold"` until `release`.
 */
import { Effect, type Scope } from "effect"
import type { IncomingHttpHeaders } from "node:http"
import * as LocalServer from "./internal/LocalServer.js"

/** One request as the server got it. */
export type Received = LocalServer.Received

/**
 * A scripted answer: a status with optional headers and body, `"reset"`, or `"hold"` (kept open
 * until `release`, then answered normally: a create held by `Prefer: wait`).
 */
export type Scripted =
  | { readonly status: number; readonly headers?: Readonly<Record<string, string>>; readonly body?: unknown }
  | "reset"
  | "hold"

/** What the model does with an input: its output (files are bytes, served by this server) or its error. */
export type Outcome =
  | { readonly output: unknown; readonly files?: ReadonlyArray<{ contentType: string; bytes: Uint8Array }> }
  | { readonly error: string }

/** The options of the server. */
export interface Options {
  /** The token it demands (none: no check). */
  readonly token?: string
  /** Reads of a prediction before it ends (0: it ends at once, and `Prefer: wait` answers it finished). */
  readonly steps?: number
  /**
   * The model: its outcome for an input. Default: one PNG file (`image`), output `[url]`. An
   * output string `"$file0"` stands for the URL of the first file.
   */
  readonly model?: (input: unknown) => Outcome
  /** The file of the default model. */
  readonly image?: Uint8Array
}

/** A prediction as the server keeps it. */
export interface Prediction {
  readonly id: string
  status: "starting" | "processing" | "succeeded" | "failed" | "canceled"
  readonly input: unknown
  readonly model: string
  readonly version: string | null
  reads: number
  readonly outcome: Outcome
}

/** A running server. */
export interface TestReplicateServer {
  /** The API root: `http://127.0.0.1:<port>`. */
  readonly baseUrl: string
  /** `127.0.0.1:<port>`, as the execution's log names it. */
  readonly host: string
  /** Every request so far, in arrival order (file downloads included). */
  readonly received: ReadonlyArray<Received>
  /** The next request not yet taken; fails after 5 s rather than hang the test. */
  readonly next: Effect.Effect<Received, Error>
  /** The predictions, by id. */
  readonly predictions: ReadonlyMap<string, Prediction>
  /** Ids of the predictions a cancel request reached, in order. */
  readonly canceled: ReadonlyArray<string>
  /** Queues answers for the next API requests (not file downloads), before the normal ones. */
  readonly script: (...answers: ReadonlyArray<Scripted>) => void
  /** Answers every held request as if it had not been held. */
  readonly release: Effect.Effect<void>
}

const errorBody = (status: number, title: string, detail: string) => ({ status, body: { title, detail, status } })

/** Starts a server; it stops with the scope, open connections included. */
export const start = (options: Options = {}): Effect.Effect<TestReplicateServer, never, Scope.Scope> =>
  Effect.gen(function*() {
    const predictions = new Map<string, Prediction>()
    const canceled: Array<string> = []
    let base = ""
    const files = LocalServer.makeFiles(() => base, { objects: false })
    let counter = 0
    const steps = options.steps ?? 2

    const outcomeOf = (input: unknown): Outcome => {
      if (options.model !== undefined) return options.model(input)
      const image = options.image ?? LocalServer.pngBytes
      return { output: ["$file0"], files: [{ contentType: "image/png", bytes: image }] }
    }

    /** The prediction as the API shows it. */
    const view = (p: Prediction) => {
      let output: unknown = null
      if (p.status === "succeeded" && "output" in p.outcome) output = p.outcome.output
      return {
        id: p.id,
        model: p.model,
        version: p.version,
        input: p.input,
        logs: "",
        output,
        data_removed: false,
        error: p.status === "failed" && "error" in p.outcome ? p.outcome.error : null,
        status: p.status,
        created_at: "2026-01-01T00:00:00.000Z",
        urls: {
          get: `${base}/v1/predictions/${p.id}`,
          cancel: `${base}/v1/predictions/${p.id}/cancel`,
          stream: `${base}/v1/stream/${p.id}`,
          web: `https://replicate.com/p/${p.id}`
        }
      }
    }

    /** Moves a running prediction on by one read. */
    const advance = (p: Prediction) => {
      if (p.status !== "starting" && p.status !== "processing") return
      p.reads += 1
      if (p.reads >= steps) p.status = "error" in p.outcome ? "failed" : "succeeded"
      else p.status = "processing"
    }

    const create = (model: string, version: string | null, json: unknown) => {
      const input = (json as { input?: unknown } | undefined)?.input
      if (input === null || typeof input !== "object" || Array.isArray(input)) {
        return errorBody(422, "Input validation failed", "- input: Invalid type. Expected: object")
      }
      counter += 1
      const given = outcomeOf(input)
      let outcome = given
      if ("output" in given && given.files !== undefined) {
        outcome = { output: files.keep(given.files)(given.output) }
      }
      const p: Prediction = {
        id: `pred${String(counter).padStart(4, "0")}`,
        status: "starting",
        input,
        model,
        version,
        reads: 0,
        outcome
      }
      predictions.set(p.id, p)
      if (steps === 0) p.status = "error" in outcome ? "failed" : "succeeded"
      return { status: 201, body: view(p) }
    }

    const normal = (method: string, path: string, headers: IncomingHttpHeaders, json: unknown) => {
      if (options.token !== undefined && headers["authorization"] !== `Bearer ${options.token}`) {
        const sent = String(headers["authorization"] ?? "")
        return errorBody(401, "Unauthenticated", `You did not pass a valid authentication token (got '${sent}')`)
      }
      const modelRoute = /^\/v1\/models\/([^/]+)\/([^/]+)\/predictions$/.exec(path)
      if (method === "POST" && modelRoute !== null) {
        return create(`${modelRoute[1]}/${modelRoute[2]}`, null, json)
      }
      if (method === "POST" && path === "/v1/predictions") {
        const version = (json as { version?: unknown } | undefined)?.version
        if (typeof version !== "string") return errorBody(422, "Input validation failed", "- version is required")
        return create("owner/versioned", version, json)
      }
      const read = /^\/v1\/predictions\/([^/]+)$/.exec(path)
      if (method === "GET" && read !== null) {
        const p = predictions.get(read[1]!)
        if (p === undefined) return errorBody(404, "Not found", "The requested resource could not be found.")
        advance(p)
        return { status: 200, body: view(p) }
      }
      const cancel = /^\/v1\/predictions\/([^/]+)\/cancel$/.exec(path)
      if (method === "POST" && cancel !== null) {
        const p = predictions.get(cancel[1]!)
        if (p === undefined) return errorBody(404, "Not found", "The requested resource could not be found.")
        canceled.push(p.id)
        if (p.status === "starting" || p.status === "processing") p.status = "canceled"
        return { status: 200, body: view(p) }
      }
      return errorBody(404, "Not found", `No route for ${method} ${path}`)
    }

    const served = yield* LocalServer.serveScripted(files, normal)
    base = served.baseUrl
    return { ...served, predictions, canceled }
  })
