/**
 * Follows an execution until it ends: its event stream (`GET …/events`, read with `fetch` and a
 * streamed body) resumed with `Last-Event-ID` after a break, or, on a server without the stream
 * or a stream that cannot be opened, long polling (`Prefer: wait=20` with `If-None-Match`). The
 * handlers see each change of the execution, each node's progress, each log line and each live
 * preview image.
 */
import * as ServerSentEvents from "@appexec/client/ServerSentEvents"
import { type Api, ApiError, isAbort, isNotAvailable } from "./Api.js"
import { type ExecutionView, isFinished, type LogLine, type Preview, type Progress } from "./Wire.js"

/** What a follow reports. */
export interface Handlers {
  readonly execution: (execution: ExecutionView) => void
  readonly progress: (progress: Progress) => void
  readonly log: (line: LogLine) => void
  /** A live preview image (the stream's `preview` event); absent: previews are not followed. */
  readonly preview?: (preview: Preview) => void
  /** How the execution is followed now: its event stream, or polling. */
  readonly mode: (mode: "live" | "polling") => void
}

/** Silence after which a stream is taken as broken: its heartbeat comes every 15 s. */
const IDLE_MS = 45_000

/** Seconds a poll is held. */
const WAIT_SECONDS = 20

/** Broken streams in a row after which the follow polls instead. */
const MAX_BREAKS = 4

const sleep = (ms: number, signal: AbortSignal) =>
  new Promise<void>((resolve) => {
    const timer = setTimeout(done, ms)
    function done() {
      signal.removeEventListener("abort", done)
      clearTimeout(timer)
      resolve()
    }
    signal.addEventListener("abort", done, { once: true })
  })

/** Parses an event's JSON data; undefined when it is not JSON. */
const parse = (data: string): unknown => {
  try {
    return JSON.parse(data)
  } catch {
    return undefined
  }
}

/** How one connection of the stream ended: `broken` ones are opened again, after `Last-Event-ID`. */
type Ended = "finished" | "broken" | "unavailable"

/** One connection of the stream, read to its end. */
const connect = async (
  api: Api,
  executionId: string,
  reader: ServerSentEvents.Reader,
  handlers: Handlers,
  signal: AbortSignal,
  received: () => void
): Promise<Ended> => {
  const connection = new AbortController()
  const abort = () => connection.abort()
  signal.addEventListener("abort", abort, { once: true })
  let idle: ReturnType<typeof setTimeout> | undefined
  const awake = () => {
    clearTimeout(idle)
    idle = setTimeout(abort, IDLE_MS)
  }
  try {
    awake()
    const lastEventId = reader.lastEventId()
    const response = await api.fetch(`/v1/executions/${encodeURIComponent(executionId)}/events`, {
      headers: { accept: "text/event-stream", ...(lastEventId === "" ? {} : { "last-event-id": lastEventId }) },
      signal: connection.signal
    })
    const type = response.headers.get("content-type") ?? ""
    if (response.status === 404 || response.status === 406) {
      const error = await response.json().then(
        (body: { error?: { message?: string } }) => new ApiError(response.status, "", body.error?.message ?? ""),
        () => new ApiError(response.status, "", "")
      )
      if (response.status === 406 || isNotAvailable(error)) return "unavailable"
      throw new ApiError(404, "not_found", "This run does not exist, or belongs to another workspace.")
    }
    if (!response.ok || !type.startsWith("text/event-stream") || response.body === null) {
      await response.body?.cancel()
      return response.status === 429 || response.status >= 500 ? "broken" : "unavailable"
    }
    handlers.mode("live")
    const decoder = new TextDecoder()
    const body = response.body.getReader()
    for (;;) {
      const { done, value } = await body.read()
      if (done) return "broken"
      awake()
      received()
      for (const message of reader.push(decoder.decode(value, { stream: true }))) {
        const data = parse(message.data)
        if (data === undefined) continue
        if (message.event === "execution") {
          const execution = data as ExecutionView
          handlers.execution(execution)
          if (isFinished(execution.status)) {
            await body.cancel()
            return "finished"
          }
        } else if (message.event === "progress") handlers.progress(data as Progress)
        else if (message.event === "log") handlers.log(data as LogLine)
        else if (message.event === "preview") handlers.preview?.(data as Preview)
      }
    }
  } catch (error) {
    if (signal.aborted) return "finished"
    if (isAbort(error) || (error instanceof ApiError && error.status === 0) || error instanceof TypeError) {
      return "broken"
    }
    throw error
  } finally {
    clearTimeout(idle)
    signal.removeEventListener("abort", abort)
  }
}

/** Polls until the execution ends, each read held until it changes; logs read again at each change. */
const poll = async (api: Api, executionId: string, handlers: Handlers, signal: AbortSignal): Promise<void> => {
  handlers.mode("polling")
  let etag: string | undefined
  while (!signal.aborted) {
    const polled = await api.executions.poll(executionId, { etag, waitSeconds: WAIT_SECONDS, signal })
    if (polled.execution !== undefined) {
      etag = polled.etag
      handlers.execution(polled.execution)
      const lines = await api.executions.logs(executionId, signal).catch(() => [])
      for (const line of lines) handlers.log(line)
      if (isFinished(polled.execution.status)) return
    }
    // A server that does not hold reads is polled every 3 seconds.
    if (!polled.held) await sleep(3_000, signal)
  }
}

/**
 * Follows `executionId` until it ends or `signal` aborts. Rejects with an `ApiError` the stream
 * or the polls met (401, 404), never with the abort.
 */
export const follow = async (api: Api, executionId: string, handlers: Handlers, signal: AbortSignal): Promise<void> => {
  const reader = ServerSentEvents.makeReader()
  let breaks = 0
  try {
    while (!signal.aborted) {
      let received = false
      const ended = await connect(api, executionId, reader, handlers, signal, () => (received = true))
      if (ended === "finished") return
      if (ended === "unavailable") return await poll(api, executionId, handlers, signal)
      // A stream that broke after it brought something is resumed at once; only connections in a
      // row that bring nothing wait longer and longer, then give way to polling.
      if (received) breaks = 0
      else breaks += 1
      if (breaks >= MAX_BREAKS) return await poll(api, executionId, handlers, signal)
      if (breaks > 0) await sleep(Math.min(8_000, 500 * 2 ** breaks), signal)
    }
  } catch (error) {
    if (isAbort(error) || signal.aborted) return
    throw error
  }
}
