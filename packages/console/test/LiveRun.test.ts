/**
 * How the console follows a run, against a scripted server behind `fetch`: the event stream read
 * as it comes (its live previews too) and resumed with `Last-Event-ID` after a break, until the
 * final execution; long polling on a server without the stream; a refused key signs out.
 */
import { afterEach, describe, expect, it, vi } from "@effect/vitest"
import { ApiError, makeApi } from "../src/app/api/Api.js"
import { follow, type Handlers } from "../src/app/api/LiveRun.js"
import type { ExecutionView } from "../src/app/api/Wire.js"

const BASE = "http://appexec.test"
const ID = "fe401622-0000-4000-8000-000000000001"

const execution = (status: ExecutionView["status"]): ExecutionView => ({
  executionId: ID,
  workflowId: "4caf7a6f-0000-4000-8000-000000000002",
  status,
  outputs: [],
  errorMessage: null,
  startedAt: null,
  completedAt: null,
  createdAt: "2026-11-26T00:53:12.700Z",
  attempt: 1
})

/** One request the scripted server saw. */
interface Seen {
  readonly path: string
  readonly headers: Headers
}

/** A `fetch` that answers each request with the next of `answers`, recording what it saw. */
const script = (answers: Array<(request: Seen) => Response>) => {
  const seen: Array<Seen> = []
  vi.stubGlobal("fetch", (url: string, init: RequestInit = {}) => {
    const request = { path: new URL(url).pathname, headers: new Headers(init.headers) }
    seen.push(request)
    const answer = answers.shift()
    if (answer === undefined) return Promise.reject(new Error(`no answer scripted for ${request.path}`))
    return Promise.resolve(answer(request))
  })
  return seen
}

/** An event stream answer whose body is `frames`, one chunk each, then its end. */
const events = (...frames: Array<string>) => () =>
  new Response(
    new ReadableStream<Uint8Array>({
      start(controller) {
        for (const frame of frames) controller.enqueue(new TextEncoder().encode(frame))
        controller.close()
      }
    }),
    { headers: { "content-type": "text/event-stream" } }
  )

const frame = (id: number, event: string, data: unknown) =>
  `id: ${id}\nevent: ${event}\ndata: ${JSON.stringify(data)}\n\n`

const json = (status: number, body: unknown, headers: Record<string, string> = {}) => () =>
  new Response(JSON.stringify(body), { status, headers: { "content-type": "application/json", ...headers } })

/** Handlers that record what they were told. */
const recorder = () => {
  const told: Array<string> = []
  const handlers: Handlers = {
    execution: (e) => told.push(`execution ${e.status}`),
    progress: (p) => told.push(`progress ${p.nodeId} ${p.fraction}`),
    log: (l) => told.push(`log ${l.message}`),
    preview: (p) => told.push(`preview ${p.nodeId} ${p.mediaType} ${p.url}`),
    mode: (m) => told.push(`mode ${m}`)
  }
  return { told, handlers }
}

afterEach(() => {
  vi.unstubAllGlobals()
})

describe("following a run", () => {
  it("reads the stream as it comes (previews too), resumes after a break with Last-Event-ID, and ends with the run", async () => {
    const seen = script([
      events(
        frame(1, "execution", execution("running")),
        frame(2, "progress", { nodeId: "wait", fraction: 0.5, message: null }),
        ": keep-alive\n\n",
        frame(3, "log", { at: "2026-11-26T00:53:13.000Z", level: "info", nodeId: "wait", message: "half way" }),
        frame(4, "preview", {
          nodeId: "render",
          url: `${BASE}/media/executions/${ID}/preview-1-1.jpg`,
          mediaType: "image/jpeg",
          at: "2026-11-26T00:53:13.500Z"
        })
      ),
      events(frame(9, "execution", execution("completed")), frame(10, "log", { message: "never read" }))
    ])
    const { handlers, told } = recorder()
    await follow(makeApi(BASE, "aex_key", () => {}), ID, handlers, new AbortController().signal)
    expect(told).toEqual([
      "mode live",
      "execution running",
      "progress wait 0.5",
      "log half way",
      `preview render image/jpeg ${BASE}/media/executions/${ID}/preview-1-1.jpg`,
      "mode live",
      "execution completed"
    ])
    expect(seen.map((s) => s.path)).toEqual([`/v1/executions/${ID}/events`, `/v1/executions/${ID}/events`])
    expect(seen[0]!.headers.get("last-event-id")).toBeNull()
    expect(seen[1]!.headers.get("last-event-id")).toBe("4")
    for (const request of seen) {
      expect(request.headers.get("x-api-key")).toBe("aex_key")
      expect(request.headers.get("accept")).toBe("text/event-stream")
    }
  })

  it("polls, each read held with Prefer: wait and If-None-Match, on a server without the stream", async () => {
    const seen = script([
      json(404, { error: { code: "not_found", message: `No endpoint GET /v1/executions/${ID}/events.` } }),
      json(200, { data: execution("running") }, { etag: "\"r1\"", "preference-applied": "wait=20" }),
      json(200, { data: [{ at: "2026-11-26T00:53:13.000Z", level: "info", nodeId: null, message: "a line" }] }),
      () => new Response(null, { status: 304, headers: { etag: "\"r1\"", "preference-applied": "wait=20" } }),
      json(200, { data: execution("completed") }, { etag: "\"c1\"", "preference-applied": "wait=20" }),
      json(200, { data: [] })
    ])
    const { handlers, told } = recorder()
    await follow(makeApi(BASE, "aex_key", () => {}), ID, handlers, new AbortController().signal)
    expect(told).toEqual(["mode polling", "execution running", "log a line", "execution completed"])
    const polls = seen.filter((s) => s.path === `/v1/executions/${ID}`)
    expect(polls.map((p) => p.headers.get("prefer"))).toEqual(["wait=20", "wait=20", "wait=20"])
    expect(polls.map((p) => p.headers.get("if-none-match"))).toEqual([null, "\"r1\"", "\"r1\""])
  })

  it("a refused key signs out and ends the follow with the refusal", async () => {
    script([json(401, { error: { code: "unauthorized", message: "The API key is not valid." } })])
    const { handlers } = recorder()
    let refused = 0
    const followed = follow(makeApi(BASE, "aex_revoked", () => refused++), ID, handlers, new AbortController().signal)
    await expect(followed).rejects.toBeInstanceOf(ApiError)
    await expect(followed).rejects.toMatchObject({ status: 401, message: "Your key was refused: sign in again" })
    expect(refused).toBe(1)
  })

  it("a run that does not exist is said so", async () => {
    script([json(404, { error: { code: "not_found", message: "Execution not found." } })])
    const { handlers } = recorder()
    await expect(follow(makeApi(BASE, "aex_key", () => {}), ID, handlers, new AbortController().signal)).rejects
      .toMatchObject({ status: 404, code: "not_found" })
  })
})
