/**
 * A reader of server-sent events over `node:http`, for benchmarks that time each event or hold
 * thousands of streams: each event is stamped with the time (`Date.now()`) the chunk that
 * completed it arrived, before it is parsed. Comments (heartbeats) are skipped; multi-line data
 * is joined with newlines, as the HTML standard's reader does.
 */
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

/** The event of one block of lines (between blank lines); undefined for a comment-only block. */
const parse = (block: string, receivedAt: number): Event | undefined => {
  let id = ""
  let event = "message"
  const data: Array<string> = []
  for (const line of block.split(/\r?\n/)) {
    if (line === "" || line.startsWith(":")) continue
    const colon = line.indexOf(":")
    const field = colon === -1 ? line : line.slice(0, colon)
    const value = colon === -1 ? "" : line.slice(colon + 1).replace(/^ /, "")
    if (field === "id") id = value
    else if (field === "event") event = value
    else if (field === "data") data.push(value)
  }
  return data.length === 0 ? undefined : { id, event, data: data.join("\n"), receivedAt }
}

/** Feeds a response's chunks to `onEvent`, one call per complete event. */
const read = (response: IncomingMessage, onEvent: (event: Event) => void) => {
  let buffer = ""
  response.setEncoding("utf8")
  response.on("data", (chunk: string) => {
    const receivedAt = Date.now()
    buffer += chunk
    for (let end = buffer.search(/\r?\n\r?\n/); end !== -1; end = buffer.search(/\r?\n\r?\n/)) {
      const block = buffer.slice(0, end)
      buffer = buffer.slice(end).replace(/^\r?\n\r?\n/, "")
      const event = parse(block, receivedAt)
      if (event !== undefined) onEvent(event)
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
