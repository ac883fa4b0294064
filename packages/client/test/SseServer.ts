/**
 * A scripted appexec for the client's event-stream tests, on a real socket (`serveFetch`): each
 * request to `GET /v1/executions/{id}/events` takes the next scripted connection (what it sends,
 * chunk by chunk, then whether it ends, breaks, or stays open and silent), `GET /v1/executions/{id}`
 * answers the next scripted status, and every request is recorded with the headers that matter.
 */
import { Effect } from "effect"
import { serveFetch } from "./FetchServer.js"

/** The execution the script is about. */
export const EXECUTION_ID = "6f1c1d7e-2b1a-4c3e-9a55-1f2e3d4c5b6a"

/** An execution as the wire carries it. */
export const execution = (status: string, extra: Record<string, unknown> = {}) => ({
  executionId: EXECUTION_ID,
  workflowId: "0b7a4c2e-8f3d-4e1a-a2b3-c4d5e6f70819",
  status,
  outputs: [],
  errorMessage: status === "failed" ? "It broke." : null,
  startedAt: status === "queued" ? null : "2026-11-22T10:00:01.000Z",
  completedAt: status === "completed" || status === "failed" ? "2026-11-22T10:00:09.000Z" : null,
  createdAt: "2026-11-22T10:00:00.000Z",
  ...extra
})

/** One SSE event as the server writes it. */
export const sse = (event: string, id: number | string, data: unknown) =>
  `event: ${event}\nid: ${id}\ndata: ${JSON.stringify(data)}\n\n`

/** One connection of the script: the chunks it sends, then how it ends. */
export interface Connection {
  readonly send: ReadonlyArray<string>
  /** `end`: the response ends; `drop`: the connection breaks; `hang`: it stays open, silent. */
  readonly then: "end" | "drop" | "hang"
}

/** An answer to the event stream request that is not a stream. */
export interface Refusal {
  readonly status: number
  readonly body: unknown
  readonly contentType?: string
}

/** What a request carried. */
export interface Recorded {
  readonly method: string
  readonly path: string
  readonly accept: string | null
  readonly apiKey: string | null
  readonly lastEventId: string | null
}

/** The answer of an appexec without the event stream (route not found). */
export const routeNotFound: Refusal = {
  status: 404,
  body: {
    error: {
      code: "not_found",
      message:
        `No endpoint GET /v1/executions/${EXECUTION_ID}/events. The endpoints are listed in the API documentation.`
    }
  }
}

/** The answer for an execution that does not exist. */
export const executionNotFound: Refusal = {
  status: 404,
  body: { error: { code: "not_found", message: `Execution ${EXECUTION_ID} does not exist.` } }
}

const json = (status: number, body: unknown, contentType = "application/json") =>
  new Response(JSON.stringify(body), { status, headers: { "content-type": contentType } })

const encoder = new TextEncoder()

/** A body that sends `connection`'s chunks, one per read, then ends as scripted; `closed` runs when the client goes. */
const body = (connection: Connection, closed: () => void) => {
  const chunks = [...connection.send]
  return new ReadableStream<Uint8Array>({
    pull: (controller) => {
      const next = chunks.shift()
      if (next !== undefined) return controller.enqueue(encoder.encode(next))
      if (connection.then === "end") return controller.close()
      if (connection.then === "drop") return controller.error(new Error("connection cut"))
      return new Promise<void>(() => undefined)
    },
    cancel: closed
  }, { highWaterMark: 0 })
}

/**
 * Serves the script until the scope closes: `connections` for the event stream (a `Refusal`
 * answers instead of a stream), `statuses` for the polls, `logs` for the log read.
 */
export const serveScript = (script: {
  readonly connections?: ReadonlyArray<Connection | Refusal>
  readonly statuses?: ReadonlyArray<string>
  readonly logs?: ReadonlyArray<unknown>
}) =>
  Effect.gen(function*() {
    const requests: Array<Recorded> = []
    const connections = [...(script.connections ?? [])]
    const statuses = [...(script.statuses ?? [])]
    let closedConnections = 0
    const url = yield* serveFetch(async (request) => {
      const path = new URL(request.url).pathname
      requests.push({
        method: request.method,
        path,
        accept: request.headers.get("accept"),
        apiKey: request.headers.get("x-api-key"),
        lastEventId: request.headers.get("last-event-id")
      })
      if (path === `/v1/executions/${EXECUTION_ID}/events`) {
        const next = connections.shift()
        if (next === undefined) return json(500, { error: { code: "internal_error", message: "script ended" } })
        if ("status" in next) return json(next.status, next.body, next.contentType)
        return new Response(body(next, () => void closedConnections++), {
          headers: { "content-type": "text/event-stream", "cache-control": "no-cache" }
        })
      }
      if (path === `/v1/executions/${EXECUTION_ID}`) {
        const status = statuses.length > 1 ? statuses.shift()! : statuses[0] ?? "completed"
        return json(200, { data: execution(status) })
      }
      if (path === `/v1/executions/${EXECUTION_ID}/logs`) return json(200, { data: script.logs ?? [] })
      return json(404, executionNotFound.body)
    })
    return { url, requests, closed: () => closedConnections }
  })
