/**
 * One request and its answer, as every server adapter (a Node `(req, res)` listener, a web
 * `Request → Response` handler) hands them to the HTTP app: plain data, so the app knows no
 * server and an adapter copies nothing it does not need.
 */
import { Effect, type Exit } from "effect"

/**
 * Why a request body could not be read; an unreadable one may say why in words a client can act
 * on (`reason`: a host's body parser read it first, say).
 */
export type BodyFailure = { readonly _tag: "TooLarge" } | { readonly _tag: "Unreadable"; readonly reason?: string }

/** A request as the app sees it. */
export interface ServerRequest {
  readonly method: string
  /** Path and query as sent, e.g. `/api/v1/apps?search=x`. */
  readonly url: string
  /** Header values by lower-case name. */
  readonly headers: Readonly<Record<string, string | undefined>>
  /** The peer's address, when the server knows it. */
  readonly remoteAddress: string | undefined
  /**
   * The whole body, read on demand and at most `maxBytes` long. Past the bound it fails
   * `TooLarge`; the adapter reads and drops the rest up to a bound of its own (the Node listener
   * of `@appexec/platform-node` before it writes the answer, `NodeListener.MAX_DRAIN_BYTES`; the
   * web handler up to `DRAIN_FACTOR` times `maxBytes`), so that a client still sending can read
   * the 413.
   */
  readonly body: (maxBytes: number) => Effect.Effect<Uint8Array, BodyFailure>
  /**
   * How many bytes of the body `body` has received so far (0 before it is called), for an
   * endpoint that cuts a body arriving too slowly (uploads: `UploadPace`); absent when the
   * adapter does not count them.
   */
  readonly received?: (() => number) | undefined
}

/**
 * A body sent as it is made (the event stream of an execution): `run` writes each chunk with the
 * `write` it is given, which writes and flushes it (and waits while the client is slow to read),
 * and the answer ends when `run` ends. `run` never fails: what goes wrong in it ends it. An
 * adapter interrupts it when its client goes away, and runs `release` once it is done with the
 * body: after `run` ended or was interrupted, or instead of running it (the client went away
 * before the answer began). `release` frees what the body holds (its place among a key's open
 * streams, its follower); running it more than once does nothing more.
 */
export interface StreamedBody {
  readonly _tag: "StreamedBody"
  readonly run: (write: (chunk: Uint8Array) => Effect.Effect<void>) => Effect.Effect<void>
  readonly release: Effect.Effect<void>
}

/** An answer; header names are lower-case. `body` is absent for answers without one (304, HEAD). */
export interface ServerResponse {
  readonly status: number
  readonly headers: Readonly<Record<string, string>>
  readonly body: string | Uint8Array | StreamedBody | undefined
}

/** Whether `body` is sent as it is made. */
export const isStreamed = (body: ServerResponse["body"]): body is StreamedBody =>
  typeof body === "object" && !(body instanceof Uint8Array)

/** A JSON answer. */
export const json = (
  status: number,
  value: unknown,
  headers: Readonly<Record<string, string>> = {}
): ServerResponse => ({
  status,
  headers: Object.assign({ "content-type": "application/json" }, headers),
  body: JSON.stringify(value)
})

/** The same answer with `headers` added (replacing any of the same name). */
export const withHeaders = (response: ServerResponse, headers: Readonly<Record<string, string>>): ServerResponse => ({
  status: response.status,
  headers: Object.assign({}, response.headers, headers),
  body: response.body
})

/** How far past the bound the web handler still drains a body before it gives the body up. */
export const DRAIN_FACTOR = 16

/**
 * The same request whose body, once read, is read again from memory: for a request that may be
 * run twice (a counted start that falls back to the usual way, `AppexecHttp`).
 */
export const readOnce = (request: ServerRequest): ServerRequest => {
  let read: Exit.Exit<Uint8Array, BodyFailure> | undefined
  return {
    ...request,
    body: (maxBytes) => read ?? Effect.onExit(request.body(maxBytes), (exit) => Effect.sync(() => void (read = exit)))
  }
}
