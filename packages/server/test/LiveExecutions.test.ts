/**
 * Live executions black-box (docs/api.md#live-executions), through the compiled command on a real
 * socket, on SQLite (`serve` runs everything) and on PostgreSQL (an API process and a worker
 * process on other data directories, so what the worker reports reaches the API only through the
 * database). For an app with a slow branch and a fast branch, an event stream shows the execution
 * running, the slow branch's progress, the fast output completed while the execution still runs,
 * log lines, then the terminal snapshot, and ends; a stream dropped mid-way and resumed with
 * `Last-Event-ID` misses no log line and repeats none, and ends on the same newest progress and
 * final snapshot. Snapshots and progress are states, sent at their newest: two streams (on a loaded
 * machine, one connects or reads later) may each skip a state the other saw. The lease is long
 * enough that a loaded machine cannot miss its renewal: one attempt, whose ids the streams see.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { writeFileSync } from "node:fs"
import { createServer } from "node:http"
import type { AddressInfo } from "node:net"
import { join } from "node:path"
import { backends } from "./support/Backends.js"
import { spawnAppexec, startServe, tempDataDir } from "./support/ServeProcess.js"

/** An origin on 127.0.0.1 that answers `{"text": "…"}` after `delayMs`; closed with the scope. */
const startOrigin = (delayMs: number) =>
  Effect.acquireRelease(
    Effect.async<{ readonly url: string; readonly close: () => void }>((resume) => {
      const server = createServer((req, res) => {
        req.resume()
        setTimeout(
          () => res.writeHead(200, { "content-type": "application/json" }).end("{\"text\":\"slow answer\"}"),
          delayMs
        )
      })
      server.listen(0, "127.0.0.1", () =>
        resume(Effect.succeed({
          url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/answer`,
          close: () => server.close()
        })))
    }),
    (origin) => Effect.sync(() => origin.close())
  )

/** input → template → fast output; input → delay 3 s → http.request → slow output. */
const branchesApp = (originUrl: string) => ({
  name: "Branches",
  public: true,
  nodes: [
    { id: "prompt", type: "input.text", label: "Prompt", config: { name: "prompt", required: true } },
    { id: "shout", type: "text.template", label: "Shout", config: { template: "{{prompt}}!" } },
    { id: "fast", type: "output.text", label: "Fast" },
    { id: "wait", type: "util.delay", label: "Wait", config: { ms: 3000 } },
    { id: "call", type: "http.request", label: "Call", config: { url: originUrl, pick: "/text" } },
    { id: "slow", type: "output.text", label: "Slow" }
  ],
  edges: [
    { source: "prompt", target: "shout" },
    { source: "shout", target: "fast" },
    { source: "prompt", target: "wait" },
    { source: "wait", target: "call" },
    { source: "call", target: "slow" }
  ]
})

interface Event {
  readonly event: string
  readonly id: string
  readonly data: any
}

/**
 * Reads the event stream of an execution until it ends, or until `stopAfter` holds for an event
 * (then the connection is dropped). Answers the events, and the response's status and type.
 */
const readStream = (
  url: string,
  key: string,
  options: { readonly lastEventId?: string; readonly stopAfter?: (event: Event) => boolean } = {}
) =>
  Effect.promise(async () => {
    const abort = new AbortController()
    const response = await fetch(url, {
      headers: {
        "x-api-key": key,
        accept: "text/event-stream",
        ...(options.lastEventId === undefined ? {} : { "last-event-id": options.lastEventId })
      },
      signal: abort.signal
    })
    const events: Array<Event> = []
    const decoder = new TextDecoder()
    let buffer = ""
    let ended = false
    try {
      for await (const chunk of response.body as unknown as AsyncIterable<Uint8Array>) {
        buffer += decoder.decode(chunk, { stream: true })
        let cut: number
        while ((cut = buffer.indexOf("\n\n")) !== -1) {
          const block = buffer.slice(0, cut)
          buffer = buffer.slice(cut + 2)
          const fields: Record<string, string> = {}
          for (const line of block.split("\n")) {
            if (line.startsWith(":")) continue
            const colon = line.indexOf(":")
            fields[line.slice(0, colon)] = line.slice(colon + 1).replace(/^ /, "")
          }
          if (fields["event"] === undefined) continue
          const event = { event: fields["event"], id: fields["id"]!, data: JSON.parse(fields["data"]!) }
          events.push(event)
          if (options.stopAfter?.(event) === true) {
            abort.abort()
            return { events, ended: false, status: response.status, type: response.headers.get("content-type") }
          }
        }
      }
      ended = true
    } catch (error) {
      if (!abort.signal.aborted) throw error
    }
    return { events, ended, status: response.status, type: response.headers.get("content-type") }
  })

const startBody = JSON.stringify({ inputs: { prompt: "hi" } })

for (const backend of backends) {
  describe(`live executions over the socket on ${backend.name}`, () => {
    it.scopedLive(
      "a stream shows running, progress, the fast output while running, logs, the end; a dropped one resumes exactly",
      () =>
        Effect.gen(function*() {
          const env = yield* backend.env
          const origin = yield* startOrigin(300)
          const appsDir = yield* tempDataDir
          writeFileSync(join(appsDir, "branches.json"), JSON.stringify(branchesApp(origin.url)))
          const separate = backend.name === "postgres"
          // Renewed every 40 s, where a loaded machine may delay a renewal by seconds, never by 80.
          const lease = ["--lease", "2m"]
          const api = yield* startServe(yield* tempDataDir, [
            ...(separate ? ["--no-worker"] : lease),
            "--apps",
            appsDir,
            "--allow-private-networks"
          ], env)
          if (separate) {
            const worker = yield* spawnAppexec(
              ["worker", "--data", yield* tempDataDir, "--allow-private-networks", ...lease],
              env
            )
            yield* worker.waitFor(/appexec worker is running/, "stderr", "20 seconds")
          }
          const headers = { "x-api-key": api.key, "content-type": "application/json" }
          const apps = yield* Effect.promise(() => fetch(`${api.baseUrl}/v1/apps`, { headers }).then((r) => r.json()))
          const appId: string = (apps as any).data.find((a: { name: string }) => a.name === "Branches").appId
          const start = () =>
            Effect.promise(() =>
              fetch(`${api.baseUrl}/v1/apps/${appId}/executions`, { method: "POST", headers, body: startBody })
                .then((r) => r.json() as Promise<any>)
                .then((body) => String(body.data.executionId))
            )

          const id = yield* start()
          const eventsUrl = `${api.baseUrl}/v1/executions/${id}/events`
          // One stream reads it all; another drops its connection after the first progress event
          // and comes back with the id of the last event it had.
          const [whole, dropped] = yield* Effect.all([
            readStream(eventsUrl, api.key),
            readStream(eventsUrl, api.key, { stopAfter: (e) => e.event === "progress" })
          ], { concurrency: 2 })
          expect(whole.status).toBe(200)
          expect(whole.type).toMatch(/^text\/event-stream/)
          expect(whole.ended).toBe(true)
          const events = whole.events
          const ids = events.map((e) => Number(e.id))
          expect(ids.every((n, i) => Number.isSafeInteger(n) && (i === 0 || n > ids[i - 1]!))).toBe(true)
          expect(events[0]!.event).toBe("execution")
          const outputsOf = (e: Event) =>
            Object.fromEntries((e.data.outputs as Array<any>).map((o) => [o.id, o.status]))
          const fastWhileRunning = events.findIndex((e) =>
            e.event === "execution" && e.data.status === "running" && outputsOf(e).fast === "completed" &&
            outputsOf(e).slow === "pending"
          )
          expect(fastWhileRunning).toBeGreaterThanOrEqual(0)
          const progress = events.filter((e) => e.event === "progress")
          expect(progress.length).toBeGreaterThan(0)
          expect(progress.every((e) => e.data.nodeId === "wait")).toBe(true)
          const logs = events.filter((e) => e.event === "log")
          expect(logs.map((e) => [e.data.nodeId, e.data.level, e.data.message.split(":")[0]])).toEqual([
            ["call", "info", "GET 127.0.0.1"],
            ["call", "info", "GET 127.0.0.1"]
          ])
          expect(logs[1]!.data.message).toMatch(/: 200 OK in \d+ ms/)
          const last = events.at(-1)!
          expect(last.event).toBe("execution")
          expect(last.data.status).toBe("completed")
          expect(last.data.attempt).toBe(1)
          expect(last.data.outputs.map((o: any) => o.value)).toEqual(["hi!", "slow answer"])
          // The terminal snapshot is the poll answer.
          const polled = yield* Effect.promise(() =>
            fetch(`${api.baseUrl}/v1/executions/${id}`, { headers }).then((r) => r.json() as Promise<any>)
          )
          expect(last.data).toEqual(polled.data)

          // The dropped stream, resumed: every log line once; what it missed of progress and of the
          // execution as the newest; together, nothing missing and nothing twice.
          expect(dropped.ended).toBe(false)
          const lastSeen = dropped.events.at(-1)!.id
          const resumed = yield* readStream(eventsUrl, api.key, { lastEventId: lastSeen })
          expect(resumed.ended).toBe(true)
          const joined = [...dropped.events, ...resumed.events]
          const joinedIds = joined.map((e) => Number(e.id))
          expect(joinedIds.every((n, i) => i === 0 || n > joinedIds[i - 1]!)).toBe(true)
          expect(joined.filter((e) => e.event === "log")).toEqual(logs)
          expect(joined.at(-1)).toEqual(last)
          // Snapshots and progress are states: a stream that lags (on a loaded machine, or one that
          // connected later) is sent the newest, so one may skip a state the other saw. Both end on
          // each node's same newest progress, as on the same final snapshot above.
          expect(dropped.events[0]!.event).toBe("execution")
          const newestProgress = (list: ReadonlyArray<Event>) =>
            Object.fromEntries(list.filter((e) => e.event === "progress").map((e) => [e.data.nodeId, e]))
          expect(newestProgress(joined)).toEqual(newestProgress(events))

          // The kept log, read back.
          const kept = yield* Effect.promise(() =>
            fetch(`${api.baseUrl}/v1/executions/${id}/logs`, { headers }).then((r) => r.json() as Promise<any>)
          )
          expect(kept.data.map((l: any) => l.message)).toEqual(logs.map((e) => e.data.message))
        }),
      60_000
    )
  })
}
