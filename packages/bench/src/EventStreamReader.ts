/**
 * A reader of server-sent events over `node:http`, for benchmarks that time each event or hold
 * thousands of streams: each event is stamped with the time (`Date.now()`) the chunk that
 * completed it arrived, before it is parsed (by `@appexec/client/ServerSentEvents`, the one
 * reader of the project).
 */
import * as ServerSentEvents from "@appexec/client/ServerSentEvents"
import { Effect } from "effect"
import { type Agent, get, type IncomingMessage } from "node:http"

/** One event as received. */
export interface Event {
  readonly id: string
  readonly event: string
  readonly data: string
  /** When the chunk that completed the event arrived (epoch ms). */
  readonly receivedAt: number
}

/** An open stream. */
export interface Stream {
  /** Ends the stream from this side (the socket is destroyed). */
  readonly close: () => void
  /** Resolves when the server ends the stream (or it is closed). */
  readonly ended: Promise<void>
}

/** Feeds a response's chunks to `onEvent`, one call per complete event (the client's reader). */
const read = (response: IncomingMessage, onEvent: (event: Event) => void) => {
  const reader = ServerSentEvents.makeReader()
  response.setEncoding("utf8")
  response.on("data", (chunk: string) => {
    const receivedAt = Date.now()
    for (const message of reader.push(chunk)) {
      onEvent({ id: message.lastEventId, event: message.event, data: message.data, receivedAt })
    }
  })
}

/**
 * Opens the event stream at `url` (GET with `headers` and `Accept: text/event-stream`, through
 * `agent` when given): resolved once a 200 arrives, failed on any other status or a connection
 * error before it. `onEvent` sees every event as it comes.
 */
export const open = (
  url: string,
  options: {
    readonly headers: Record<string, string>
    readonly agent?: Agent
    readonly onEvent: (event: Event) => void
  }
) =>
  Effect.async<Stream, Error>((resume) => {
    let settled = false
    const settle = (effect: Effect.Effect<Stream, Error>) => {
      if (settled) return
      settled = true
      resume(effect)
    }
    const request = get(url, {
      headers: { accept: "text/event-stream", ...options.headers },
      ...(options.agent === undefined ? {} : { agent: options.agent })
    })
    // After the 200, an error (a reset, or this side's close) only ends the stream.
    request.on("error", (error) => settle(Effect.fail(error)))
    request.once("response", (response) => {
      if (response.statusCode !== 200) {
        response.resume()
        return settle(Effect.fail(new Error(`${url}: ${response.statusCode}`)))
      }
      response.on("error", () => undefined)
      const ended = new Promise<void>((resolve) => response.once("close", resolve))
      read(response, options.onEvent)
      settle(Effect.succeed({ close: () => request.destroy(), ended }))
    })
  })
