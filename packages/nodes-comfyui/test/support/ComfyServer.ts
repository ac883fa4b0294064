/**
 * A ComfyUI server for tests, written from ComfyUI's own `server.py`, `execution.py`,
 * `comfy_execution/progress.py` and `comfy_execution/jobs.py`: real HTTP and a real websocket on
 * 127.0.0.1, port 0. One prompt runs at a time (`ComfyRun`), the others wait in the queue by
 * their number; events go only to the submitting `client_id`'s socket (`status` to everyone); a
 * socket opened again with the same `clientId` gets `executing {node}` without `prompt_id` when
 * its prompt runs; `GET /history/{id}` answers `{}` until the run is done; `POST /prompt` takes
 * the client's `prompt_id` (a canonical lowercase UUID) or makes one; `/queue` lists and deletes;
 * `/interrupt` interrupts the running prompt (only the one named by `prompt_id` when given);
 * `/api/jobs/{id}` answers a job (or 404 `{"error":"Job not found"}`) unless the server is made
 * older (`jobsApi: false`); `restart()` drops every socket and loses the queue and history.
 */
import { Effect } from "effect"
import { createServer, type IncomingMessage, type ServerResponse } from "node:http"
import type { AddressInfo } from "node:net"
import { WebSocket, WebSocketServer } from "ws"
import { KNOWN_CLASSES, OUTPUT_CLASSES, type Prompt, run, type RunEnd, type StoredFile } from "./ComfyRun.js"

/** How the test server behaves. */
export interface Options {
  /** Sampler steps of a run (a KSampler's own `steps` when fewer); default 3. */
  readonly steps?: number
  /** Milliseconds of each step; default 5. */
  readonly stepDelayMs?: number
  /** Whether `POST /prompt` keeps the client's `prompt_id` (newer ComfyUI); default true. */
  readonly clientPromptIds?: boolean
  /** Whether `GET /api/jobs/{id}` exists (newer ComfyUI); default true. */
  readonly jobsApi?: boolean
  /** The `Authorization` every request and websocket must carry (a server behind a proxy); 401 without it. */
  readonly auth?: string
  /** The node before which each run waits until `resume` (the nodes before it done, their events sent). */
  readonly holdAt?: string
  /** The node class that raises when run, and its exception. */
  readonly failing?: { readonly classType: string; readonly type: string; readonly message: string }
}

type Item = [number, string, Prompt, Record<string, unknown>, Array<string>]

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/

/** The test server as a test drives it. */
export class ComfyServer {
  /** Prompts received and queued by `POST /prompt`, since the server began (restarts included). */
  prompts = 0
  /** The most prompts the server held at once (running and queued). */
  maxLoad = 0
  /** Every `POST /interrupt` body and `POST /queue` delete, in order. */
  readonly cancels: Array<string> = []
  private readonly http = createServer((req, res) => void this.route(req, res))
  private readonly wss = new WebSocketServer({ noServer: true })
  private readonly sockets = new Map<string, WebSocket>()
  private readonly files = new Map<string, StoredFile>()
  private history: Record<string, Record<string, unknown>> = {}
  private pending: Array<Item> = []
  private running: Item | undefined
  private interruptFlag = false
  private generation = 0
  private number = 0
  private clientId: string | undefined
  private lastNode: string | null = null
  private held: Promise<void> | undefined
  private release: (() => void) | undefined
  private waiters: Array<() => void> = []
  /** Steps done by the running prompt. */
  step = 0

  constructor(private readonly options: Options = {}) {
    this.http.on("upgrade", (req, socket, head) => {
      const url = new URL(req.url ?? "/", "http://x")
      if (url.pathname !== "/ws" && url.pathname !== "/api/ws") return socket.destroy()
      if (this.options.auth !== undefined && req.headers.authorization !== this.options.auth) {
        return void socket.end("HTTP/1.1 401 Unauthorized\r\ncontent-length: 0\r\n\r\n")
      }
      this.wss.handleUpgrade(req, socket, head, (ws) => this.connect(ws, url.searchParams.get("clientId") ?? ""))
    })
  }

  /** The server's root URL, `http://127.0.0.1:PORT`. */
  url = ""

  /**
   * Starts listening on 127.0.0.1, port 0; after `close`, on the same port again (its queue,
   * history and prompt count kept, as a server whose network came back).
   */
  async listen(): Promise<void> {
    const port = this.url === "" ? 0 : Number(new URL(this.url).port)
    await new Promise<void>((resolve, reject) => {
      this.http.once("error", reject)
      this.http.listen(port, "127.0.0.1", () => {
        this.http.off("error", reject)
        resolve()
      })
    })
    this.url = `http://127.0.0.1:${(this.http.address() as AddressInfo).port}`
  }

  /** Stops: every socket closed, the running prompt abandoned; `listen` starts it again. */
  async close(): Promise<void> {
    this.generation++
    this.release?.()
    for (const ws of this.wss.clients) ws.terminate()
    this.http.closeAllConnections()
    await new Promise<void>((resolve) => this.http.close(() => resolve()))
  }

  /** A restart of ComfyUI: sockets dropped, queue and history lost (files on disk stay). */
  restart(): void {
    this.generation++
    this.pending = []
    this.running = undefined
    this.history = {}
    this.clientId = undefined
    this.lastNode = null
    this.interruptFlag = false
    this.release?.()
    this.held = undefined
    for (const ws of this.wss.clients) ws.terminate()
    this.notify()
  }

  /** Drops every websocket, as a network break would; the run goes on. */
  dropSockets(): void {
    for (const ws of this.wss.clients) ws.terminate()
  }

  /** Holds the sampler before its next step until `resume`. */
  hold(): void {
    if (this.held !== undefined) return
    this.held = new Promise<void>((resolve) => {
      this.release = resolve
    })
  }

  /** Lets a held sampler go on. */
  resume(): void {
    this.release?.()
    this.held = undefined
  }

  /** What the server holds of `promptId`: queued, running, done, or nothing. */
  stateOf(promptId: string): "pending" | "running" | "done" | "unknown" {
    if (this.running?.[1] === promptId) return "running"
    if (this.pending.some((item) => item[1] === promptId)) return "pending"
    return this.history[promptId] === undefined ? "unknown" : "done"
  }

  /** Resolves when `check` holds, checked at every change of the server's state. */
  until(check: (server: this) => boolean): Promise<void> {
    return new Promise((resolve) => {
      const test = () => {
        if (check(this)) resolve()
        else this.waiters.push(test)
      }
      test()
    })
  }

  private notify(): void {
    const waiting = this.waiters
    this.waiters = []
    for (const test of waiting) test()
  }

  private connect(ws: WebSocket, requested: string): void {
    const sid = requested === "" ? crypto.randomUUID().replaceAll("-", "") : requested
    this.sockets.set(sid, ws)
    ws.on("close", () => {
      if (this.sockets.get(sid) === ws) this.sockets.delete(sid)
    })
    ws.send(JSON.stringify({ type: "status", data: { status: this.queueInfo(), sid } }))
    // server.py: on reconnect, the currently executing client gets the current node, no prompt_id.
    if (this.clientId === sid && this.lastNode !== null) {
      ws.send(JSON.stringify({ type: "executing", data: { node: this.lastNode } }))
    }
    this.notify()
  }

  /** The input file a workflow names `subfolder/name` (as `LoadImage` reads it), if it was uploaded. */
  inputFile(name: string): StoredFile | undefined {
    const slash = name.lastIndexOf("/")
    return this.files.get(`input/${slash < 0 ? "" : name.slice(0, slash)}/${name.slice(slash + 1)}`)
  }

  /** Whether a socket of `clientId` is open. */
  connected(clientId: string): boolean {
    return this.sockets.get(clientId)?.readyState === WebSocket.OPEN
  }

  private queueInfo() {
    return { exec_info: { queue_remaining: this.pending.length + (this.running === undefined ? 0 : 1) } }
  }

  private sendTo(sid: string | undefined, type: string, data: Record<string, unknown>): void {
    const text = JSON.stringify({ type, data })
    if (sid === undefined) { for (const ws of this.sockets.values()) ws.send(text) }
    else this.sockets.get(sid)?.send(text)
  }

  private async route(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? "/", "http://x")
    const path = url.pathname.replace(/^\/api(?=\/)/, "")
    const body = await new Promise<Buffer>((resolve) => {
      const chunks: Array<Buffer> = []
      req.on("data", (c: Buffer) => chunks.push(c))
      req.on("end", () => resolve(Buffer.concat(chunks)))
    })
    const json = (status: number, value: unknown) => {
      res.writeHead(status, { "content-type": "application/json; charset=utf-8" })
      res.end(JSON.stringify(value))
    }
    const readJson = (): Record<string, unknown> => {
      try {
        const value: unknown = JSON.parse(body.toString("utf8"))
        return typeof value === "object" && value !== null ? value as Record<string, unknown> : {}
      } catch {
        return {}
      }
    }
    if (this.options.auth !== undefined && req.headers.authorization !== this.options.auth) {
      return void res.writeHead(401).end()
    }
    const jobs = url.pathname.startsWith("/api/jobs/") && this.options.jobsApi !== false
    if (req.method === "GET" && jobs) {
      const job = this.job(decodeURIComponent(url.pathname.slice("/api/jobs/".length)))
      return job === undefined ? json(404, { error: "Job not found" }) : json(200, job)
    }
    if (req.method === "POST" && path === "/prompt") return this.submit(readJson(), json)
    if (req.method === "GET" && path.startsWith("/history/")) {
      const id = decodeURIComponent(path.slice("/history/".length))
      const entry = this.history[id]
      return json(200, entry === undefined ? {} : { [id]: entry })
    }
    if (req.method === "GET" && path === "/queue") {
      return json(200, { queue_running: this.running === undefined ? [] : [this.running], queue_pending: this.pending })
    }
    if (req.method === "POST" && path === "/queue") {
      const doc = readJson()
      for (const id of Array.isArray(doc["delete"]) ? doc["delete"] : []) {
        this.cancels.push(`delete ${String(id)}`)
        this.pending = this.pending.filter((item) => item[1] !== id)
      }
      this.notify()
      res.writeHead(200).end()
      return
    }
    if (req.method === "POST" && path === "/interrupt") {
      const id = readJson()["prompt_id"]
      this.cancels.push(`interrupt ${typeof id === "string" ? id : "(any)"}`)
      // Newer servers interrupt only the prompt named, when one is named and it is the running one.
      if (this.running !== undefined && (typeof id !== "string" || id === this.running[1])) this.interruptFlag = true
      this.notify()
      res.writeHead(200).end()
      return
    }
    if (req.method === "POST" && path === "/upload/image") return this.upload(req, body, json, res)
    if (req.method === "GET" && path === "/view") {
      const type = url.searchParams.get("type") ?? "output"
      const key = `${type}/${url.searchParams.get("subfolder") ?? ""}/${url.searchParams.get("filename") ?? ""}`
      const file = this.files.get(key)
      if (file === undefined) return void res.writeHead(404).end()
      res.writeHead(200, { "content-type": file.contentType, "content-disposition": `filename="${file.filename}"` })
      res.end(file.bytes)
      return
    }
    res.writeHead(404, { "content-type": "text/plain" }).end("404: Not Found")
  }

  private submit(doc: Record<string, unknown>, json: (status: number, value: unknown) => void): void {
    const prompt = doc["prompt"]
    const invalid = (type: string, message: string, details = "") =>
      json(400, { error: { type, message, details, extra_info: {} }, node_errors: {} })
    if (typeof prompt !== "object" || prompt === null) return invalid("no_prompt", "No prompt provided")
    const nodes = prompt as Prompt
    for (const [id, node] of Object.entries(nodes)) {
      if (typeof node?.class_type !== "string") {
        return invalid("invalid_prompt", `Cannot execute because a node is missing the class_type property.`, id)
      }
      if (!KNOWN_CLASSES.has(node.class_type)) {
        return invalid(
          "invalid_prompt",
          `Cannot execute because node ${node.class_type} does not exist.`,
          `Node ID '#${id}'`
        )
      }
    }
    const outputs = Object.keys(nodes).filter((id) => OUTPUT_CLASSES.has(nodes[id]!.class_type))
    if (outputs.length === 0) return invalid("prompt_no_outputs", "Prompt has no outputs")
    const given = doc["prompt_id"]
    if (given !== undefined && (typeof given !== "string" || !UUID.test(given))) {
      return invalid("invalid_prompt", "Invalid prompt_id format", String(given))
    }
    const promptId = typeof given === "string" && this.options.clientPromptIds !== false ? given : crypto.randomUUID()
    const extra: Record<string, unknown> = { ...(doc["extra_data"] as Record<string, unknown> | undefined) }
    if (typeof doc["client_id"] === "string") extra["client_id"] = doc["client_id"]
    const number = this.number++
    this.prompts++
    this.pending.push([number, promptId, nodes, extra, outputs])
    this.maxLoad = Math.max(this.maxLoad, this.pending.length + (this.running === undefined ? 0 : 1))
    json(200, { prompt_id: promptId, number, node_errors: {} })
    this.sendTo(undefined, "status", { status: this.queueInfo() })
    this.notify()
    void this.work()
  }

  private async upload(
    req: IncomingMessage,
    body: Buffer,
    json: (status: number, value: unknown) => void,
    res: ServerResponse
  ): Promise<void> {
    const form = await new Request("http://x/", {
      method: "POST",
      headers: { "content-type": req.headers["content-type"] ?? "" },
      body: new Uint8Array(body)
    }).formData().catch(() => undefined)
    const image = form?.get("image")
    if (form === undefined || image === null || image === undefined || typeof image === "string" || image.name === "") {
      return void res.writeHead(400).end()
    }
    const subfolder = String(form.get("subfolder") ?? "")
    const type = form.get("type") === "temp" ? "temp" : "input"
    this.files.set(`${type}/${subfolder}/${image.name}`, {
      filename: image.name,
      subfolder,
      type,
      contentType: image.type === "" ? "application/octet-stream" : image.type,
      bytes: new Uint8Array(await image.arrayBuffer())
    })
    json(200, { name: image.name, subfolder, type })
  }

  /** A job of `comfy_execution/jobs.py` for `promptId`, or none. */
  private job(promptId: string): Record<string, unknown> | undefined {
    const base = { id: promptId, priority: 0, workflow_id: null }
    if (this.running?.[1] === promptId) return { ...base, status: "in_progress", priority: this.running[0] }
    const queued = this.pending.find((item) => item[1] === promptId)
    if (queued !== undefined) return { ...base, status: "pending", priority: queued[0] }
    const done = this.history[promptId]
    if (done === undefined) return undefined
    const status = done["status"] as { status_str: string; messages: Array<[string, unknown]> }
    const interrupted = status.messages.some(([type]) => type === "execution_interrupted")
    const error = status.messages.find(([type]) => type === "execution_error")?.[1]
    return {
      ...base,
      status: status.status_str === "success" ? "completed" : interrupted ? "cancelled" : "failed",
      outputs: done["outputs"],
      outputs_count: Object.keys(done["outputs"] as object).length,
      ...(error === undefined ? {} : { execution_error: error })
    }
  }

  /** The prompt worker of `main.py`: one prompt at a time, lowest number first. */
  private async work(): Promise<void> {
    if (this.running !== undefined) return
    const item = this.pending.sort((a, b) => a[0] - b[0]).shift()
    if (item === undefined) return
    const generation = this.generation
    this.running = item
    this.interruptFlag = false
    this.step = 0
    const clientId = typeof item[3]["client_id"] === "string" ? item[3]["client_id"] : undefined
    this.clientId = clientId
    this.notify()
    const abandoned = () => this.generation !== generation
    const end: RunEnd = await run(item[1], item[2], {
      send: (type, data) => this.sendTo(clientId ?? "", type, data),
      sendPreview: (jpeg) => {
        const frame = Buffer.alloc(8 + jpeg.length)
        frame.writeUInt32BE(1, 0) // BinaryEventTypes.PREVIEW_IMAGE
        frame.writeUInt32BE(1, 4) // 1: JPEG
        frame.set(jpeg, 8)
        if (clientId !== undefined) this.sockets.get(clientId)?.send(frame)
      },
      gate: () => this.held ?? Promise.resolve(),
      before: (node) => {
        if (node !== this.options.holdAt) return Promise.resolve()
        this.hold()
        return this.held ?? Promise.resolve()
      },
      interrupted: () => this.interruptFlag,
      abandoned,
      setLastNode: (node) => {
        this.lastNode = node
      },
      onStep: (_node, value) => {
        this.step = value
        this.notify()
      },
      store: (file) => this.files.set(`${file.type}/${file.subfolder}/${file.filename}`, file),
      input: (name) => this.inputFile(name),
      steps: this.options.steps ?? 3,
      stepDelayMs: this.options.stepDelayMs ?? 5,
      ...(this.options.failing === undefined ? {} : { failing: this.options.failing })
    }, item[0])
    if (abandoned()) return
    if (end.status !== "abandoned") {
      this.history[item[1]] = {
        prompt: item,
        outputs: end.outputs,
        status: { status_str: end.status, completed: end.status === "success", messages: end.messages },
        meta: {}
      }
    }
    this.running = undefined
    this.lastNode = null
    this.interruptFlag = false
    this.sendTo(clientId ?? "", "executing", { node: null, prompt_id: item[1] })
    this.sendTo(undefined, "status", { status: this.queueInfo() })
    this.notify()
    void this.work()
  }
}

/** A test server listening on 127.0.0.1, closed with the scope. */
export const make = (options: Options = {}) =>
  Effect.acquireRelease(
    Effect.promise(async () => {
      const server = new ComfyServer(options)
      await server.listen()
      return server
    }),
    (server) => Effect.promise(() => server.close())
  )
