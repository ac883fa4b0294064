/**
 * The test ComfyUI server keeps ComfyUI's protocol, checked with a plain websocket client and
 * `fetch`: events in ComfyUI's order and only to the submitting client (`status` to all),
 * binary preview frames, `{}` history until the run is done, a reconnect that gets `executing`
 * without `prompt_id`, one prompt at a time, an interrupt only of the prompt it names, the jobs
 * API, and a restart that loses history.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import WebSocket from "ws"
import * as ComfyServer from "./support/ComfyServer.js"
import { textToImage } from "./support/Workflows.js"

interface Client {
  readonly events: Array<{ type: string; data: Record<string, unknown> }>
  readonly frames: Array<Buffer>
  readonly socket: WebSocket
  /** Checks at every message received. */
  readonly checks: Array<() => void>
}

/** Resolves when `client` has received what `check` wants. */
const received = (client: Client, check: (client: Client) => boolean) =>
  Effect.promise(() =>
    new Promise<void>((resolve) => {
      const test = () => (check(client) ? resolve() : client.checks.push(test))
      test()
    })
  )

const connect = (server: ComfyServer.ComfyServer, clientId: string) =>
  Effect.acquireRelease(
    Effect.promise(() =>
      new Promise<Client>((resolve) => {
        const socket = new WebSocket(`${server.url.replace("http", "ws")}/ws?clientId=${clientId}`)
        const client: Client = { events: [], frames: [], socket, checks: [] }
        socket.on("message", (raw: Buffer, binary) => {
          if (binary) client.frames.push(raw)
          else client.events.push(JSON.parse(raw.toString("utf8")))
          for (const check of client.checks.splice(0)) check()
        })
        socket.once("open", () => resolve(client))
      })
    ),
    (client) => Effect.sync(() => client.socket.terminate())
  )

const post = (server: ComfyServer.ComfyServer, path: string, body: unknown) =>
  Effect.promise(() =>
    fetch(`${server.url}${path}`, { method: "POST", body: JSON.stringify(body) }).then(async (r) => ({
      status: r.status,
      json: r.headers.get("content-type")?.includes("json") ? await r.json() : null
    }))
  )

const get = (server: ComfyServer.ComfyServer, path: string) =>
  Effect.promise(() => fetch(`${server.url}${path}`).then(async (r) => ({ status: r.status, json: await r.json() })))

const wait = (promise: () => Promise<void>) => Effect.promise(promise)

const ID = "3f2a8a0e-5b7c-4d1e-9f00-0a1b2c3d4e5f"

describe("the test ComfyUI server", () => {
  it.live("sends a run's events in ComfyUI's order to the submitting client only, with JPEG preview frames", () =>
    Effect.gen(function*() {
      const server = yield* ComfyServer.make({ steps: 2 })
      const mine = yield* connect(server, "mine")
      const other = yield* connect(server, "other")
      const answer = yield* post(server, "/prompt", { prompt: textToImage, client_id: "mine", prompt_id: ID })
      expect(answer).toEqual({ status: 200, json: { prompt_id: ID, number: 0, node_errors: {} } })
      yield* received(mine, (c) => c.events.some((e) => e.type === "executing" && e.data["node"] === null))
      const types = mine.events.map((e) => e.type).filter((t) => t !== "status")
      expect(types.slice(0, 3)).toEqual(["execution_start", "execution_cached", "executing"])
      expect(types.filter((t) => t === "progress")).toHaveLength(2)
      expect(types.slice(-3)).toEqual(["executed", "execution_success", "executing"])
      expect(mine.events.filter((e) => e.type !== "status").at(-1)?.data).toEqual({ node: null, prompt_id: ID })
      expect(other.events.every((e) => e.type === "status")).toBe(true)
      expect(other.frames).toHaveLength(0)
      expect(mine.frames).toHaveLength(2)
      expect([mine.frames[0]!.readUInt32BE(0), mine.frames[0]!.readUInt32BE(4)]).toEqual([1, 1])
      expect(mine.frames[0]!.subarray(8, 10)).toEqual(Buffer.from([0xff, 0xd8]))
    }).pipe(Effect.scoped))

  it.live("answers {} for a prompt's history until it is done; the jobs API 404s an unknown id", () =>
    Effect.gen(function*() {
      const server = yield* ComfyServer.make()
      server.hold()
      yield* post(server, "/prompt", { prompt: textToImage, client_id: "c", prompt_id: ID })
      yield* wait(() => server.until((s) => s.stateOf(ID) === "running"))
      expect((yield* get(server, `/history/${ID}`)).json).toEqual({})
      expect((yield* get(server, `/api/jobs/${ID}`)).json).toMatchObject({ id: ID, status: "in_progress" })
      expect(yield* get(server, "/api/jobs/00000000-0000-4000-8000-000000000000")).toEqual({
        status: 404,
        json: { error: "Job not found" }
      })
      server.resume()
      yield* wait(() => server.until((s) => s.stateOf(ID) === "done"))
      const history = (yield* get(server, `/history/${ID}`)).json as Record<string, { outputs: unknown }>
      expect(history[ID]!.outputs).toEqual({
        "9": { images: [{ filename: "ComfyUI_00000_.png", subfolder: "", type: "output" }] }
      })
      const view = yield* Effect.promise(() =>
        fetch(`${server.url}/view?filename=ComfyUI_00000_.png&subfolder=&type=output`)
      )
      expect(view.headers.get("content-type")).toBe("image/png")
    }).pipe(Effect.scoped))

  it.live("runs one prompt at a time; a reconnect gets executing without prompt_id; interrupts only the prompt named", () =>
    Effect.gen(function*() {
      const server = yield* ComfyServer.make()
      server.hold()
      const second = "3f2a8a0e-5b7c-4d1e-9f00-0a1b2c3d4e60"
      yield* post(server, "/prompt", { prompt: textToImage, client_id: "a", prompt_id: ID })
      yield* post(server, "/prompt", { prompt: textToImage, client_id: "b", prompt_id: second })
      yield* wait(() => server.until((s) => s.stateOf(ID) === "running"))
      expect(server.stateOf(second)).toBe("pending")
      const again = yield* connect(server, "a")
      yield* received(again, (c) => c.events.length >= 2)
      expect(again.events[1]).toEqual({ type: "executing", data: { node: "3" } })
      yield* post(server, "/interrupt", { prompt_id: second })
      server.resume()
      yield* wait(() => server.until((s) => s.stateOf(ID) === "done" && s.stateOf(second) === "done"))
      expect((yield* get(server, `/api/jobs/${ID}`)).json).toMatchObject({ status: "completed" })
      expect(server.prompts).toBe(2)
    }).pipe(Effect.scoped))

  it.live("refuses an unknown node class and a prompt id that is no UUID; a restart loses history", () =>
    Effect.gen(function*() {
      const server = yield* ComfyServer.make()
      const unknown = yield* post(server, "/prompt", { prompt: { "1": { class_type: "Nope", inputs: {} } } })
      expect(unknown.status).toBe(400)
      expect(unknown.json).toMatchObject({ error: { type: "invalid_prompt" }, node_errors: {} })
      expect((yield* post(server, "/prompt", { prompt: textToImage, prompt_id: "ABC" })).status).toBe(400)
      yield* post(server, "/prompt", { prompt: textToImage, prompt_id: ID })
      yield* wait(() => server.until((s) => s.stateOf(ID) === "done"))
      server.restart()
      expect((yield* get(server, `/history/${ID}`)).json).toEqual({})
      expect((yield* get(server, `/api/jobs/${ID}`)).status).toBe(404)
    }).pipe(Effect.scoped))
})
