/**
 * A Node listener for a server that listens before its app is ready. `appexec serve` binds its
 * port first (the media URLs an execution hands out need it, also with port 0), then opens its
 * storage and builds the app; a request that arrives meanwhile would find no listener and never be
 * answered. Behind the gate it waits instead, in arrival order, and is handed to the app's
 * listener once there is one (`open`). When the app never comes (start-up failed, or the server
 * stops first) or is gone (`close`), every waiting request and every later one is answered 503
 * with `Retry-After` and the error body, and its connection closed.
 *
 * Waiting requests are bounded by the server's connection limits (`NodeListener.createServer`):
 * one a connection, and one that goes away is forgotten.
 *
 * ```ts
 * const gate = StartGate.make()
 * const server = NodeListener.createServer().on("request", gate.listener)
 * server.listen(port)
 * // … once the app is built:
 * gate.open(NodeListener.fromApp(app))
 * ```
 */
import { Exchange } from "@appexec/http"
import type { IncomingMessage, ServerResponse } from "node:http"
import type { Listener } from "./NodeListener.js"

/** The gate: its listener, and the two ways it stops holding requests. */
export interface StartGate {
  /** The listener to attach to the server before it listens. */
  readonly listener: Listener
  /** Hands the waiting requests, then every later one, to `listener`. Only the first call counts. */
  readonly open: (listener: Listener) => void
  /**
   * Answers the waiting requests, then every later one, 503 with `Retry-After`: start-up failed,
   * or (after `open`) the app is gone.
   */
  readonly close: () => void
}

/** `Retry-After` of the 503 a closed gate answers, in seconds (by default). */
export const DEFAULT_RETRY_AFTER_SECONDS = 5

/** A closed gate's answer. */
const unavailable = (retryAfterSeconds: number) =>
  Exchange.errorAnswer(
    503,
    { code: "internal_error", message: "The server could not start or is stopping; retry shortly." },
    { "retry-after": String(retryAfterSeconds), connection: "close" }
  )

/** A gate that holds requests until it is opened or closed. */
export const make = (options: { readonly retryAfterSeconds?: number } = {}): StartGate => {
  const refusal = unavailable(options.retryAfterSeconds ?? DEFAULT_RETRY_AFTER_SECONDS)
  const refuse = (response: ServerResponse) => {
    if (response.headersSent || response.destroyed) return
    const body = typeof refusal.body === "string" ? refusal.body : ""
    response.writeHead(refusal.status, { ...refusal.headers, "content-length": String(Buffer.byteLength(body)) })
    response.end(body)
  }
  type Waiting = readonly [IncomingMessage, ServerResponse]
  // Insertion-ordered: the requests are handed on in the order they arrived.
  let waiting: Set<Waiting> | undefined = new Set()
  let target: Listener | undefined
  const drain = (each: (request: IncomingMessage, response: ServerResponse) => void) => {
    const held = waiting ?? new Set<Waiting>()
    waiting = undefined
    for (const [request, response] of held) if (!response.destroyed) each(request, response)
  }
  return {
    listener: (request, response) => {
      if (target !== undefined) return target(request, response)
      if (waiting === undefined) return refuse(response)
      const entry: Waiting = [request, response]
      waiting.add(entry)
      response.once("close", () => waiting?.delete(entry))
    },
    open: (listener) => {
      if (waiting === undefined) return
      target = listener
      drain(listener)
    },
    close: () => {
      target = undefined
      drain((_, response) => refuse(response))
    }
  }
}
