/**
 * The plumbing the protocol test servers share (TestFalServer, TestReplicateServer,
 * TestOpenAiServer, TestReceiver): an HTTP server on 127.0.0.1 port 0 that hands each request
 * with its whole body to a handler and closes with the scope, open connections included; JSON
 * answers; scripted answers (`"reset"`, `"hold"` until released); result files served back; and
 * the `next` request taken within 5 s.
 */
import { Effect, Queue, type Scope } from "effect"
import type { IncomingHttpHeaders, IncomingMessage, ServerResponse } from "node:http"
import type { AddressInfo } from "node:net"
import { listening } from "../TestHttpServer.js"

/** A JSON answer: a status with optional headers and body. */
export interface JsonAnswer {
  readonly status: number
  readonly headers?: Readonly<Record<string, string>>
  readonly body?: unknown
}

/** A scripted answer: a JSON answer, `"reset"` (break the connection) or `"hold"` (answer on release). */
export type Scripted = JsonAnswer | "reset" | "hold"

/**
 * Listens on 127.0.0.1 port 0 (`TestHttpServer.listening`) and calls `handle` with each request
 * once its body has arrived; the server stops with the scope, open connections included. Answers
 * its port.
 */
export const listen = (
  handle: (req: IncomingMessage, res: ServerResponse, body: Buffer) => void
): Effect.Effect<number, never, Scope.Scope> =>
  Effect.map(listening, ({ server }) => {
    server.on("request", (req: IncomingMessage, res: ServerResponse) => {
      const chunks: Array<Buffer> = []
      req.on("data", (c: Buffer) => chunks.push(c))
      req.on("end", () => handle(req, res, Buffer.concat(chunks)))
    })
    return (server.address() as AddressInfo).port
  })

/** The body parsed as JSON, or `undefined` when it is none or not JSON. */
export const parseJson = (body: Buffer): unknown => {
  try {
    return JSON.parse(body.toString("utf8"))
  } catch {
    return undefined
  }
}

/** Writes `answer` as JSON with its length. */
export const writeJson = (res: ServerResponse, answer: JsonAnswer): void => {
  const body = Buffer.from(answer.body === undefined ? "" : JSON.stringify(answer.body))
  res.writeHead(answer.status, {
    "content-type": "application/json",
    "content-length": String(body.length),
    ...answer.headers
  })
  res.end(body)
}

/** Requests held by a `"hold"` answer, each answered by `release`. */
export interface Holds {
  readonly count: () => number
  readonly release: Effect.Effect<void>
}

/**
 * Carries out an answer: `"reset"` destroys the connection, `"hold"` keeps the request until
 * `release` (then answers `later()`), a JSON answer is written.
 */
export const makeResponder = () => {
  const held: Array<() => void> = []
  const respond = (req: IncomingMessage, res: ServerResponse, answer: Scripted, later: () => JsonAnswer): void => {
    if (answer === "reset") req.socket.destroy()
    else if (answer === "hold") held.push(() => writeJson(res, later()))
    else writeJson(res, answer)
  }
  const holds: Holds = {
    count: () => held.length,
    release: Effect.sync(() => {
      for (const answer of held.splice(0)) answer()
    })
  }
  return { respond, holds }
}

/** A result file the server serves back. */
export interface File {
  readonly contentType: string
  readonly bytes: Uint8Array
}

/**
 * Result files served at `GET <base>/files/<n>`: `keep` stores files and answers a function that
 * swaps each `"$file<i>"` string of a result for the URL of its i-th file (inside arrays, and
 * inside objects when `objects`); `serve` answers a download and says whether it did.
 */
export const makeFiles = (base: () => string, options: { readonly objects: boolean }) => {
  const files: Array<File> = []
  const keep = (given: ReadonlyArray<File>) => {
    const first = files.length
    for (const file of given) files.push(file)
    const swap = (v: unknown): unknown =>
      typeof v === "string" && /^\$file\d+$/.test(v)
        ? `${base()}/files/${first + Number(v.slice(5))}`
        : Array.isArray(v)
        ? v.map(swap)
        : options.objects && v !== null && typeof v === "object"
        ? Object.fromEntries(Object.entries(v).map(([k, x]) => [k, swap(x)]))
        : v
    return swap
  }
  const serve = (method: string, path: string, res: ServerResponse): boolean => {
    const file = /^\/files\/(\d+)$/.exec(path)
    if (method !== "GET" || file === null || files[Number(file[1])] === undefined) return false
    const { bytes, contentType } = files[Number(file[1])]!
    res.writeHead(200, { "content-type": contentType, "content-length": String(bytes.length) })
    res.end(bytes)
    return true
  }
  return { keep, serve }
}

/**
 * The next item of `queue`, failing with `message` after 5 s rather than hang the test; with
 * `live`, the 5 s are of the live clock, so that it times out under `TestClock` too.
 */
export const takeWithin = <A>(
  queue: Queue.Queue<A>,
  options: { readonly message: string; readonly live: boolean }
): Effect.Effect<A, Error> => {
  const take = Queue.take(queue).pipe(
    Effect.timeoutFail({ duration: "5 seconds", onTimeout: () => new Error(options.message) })
  )
  return options.live ? Effect.withClock(take, liveClock) : take
}

/** The live clock. */
const liveClock = Effect.runSync(Effect.clockWith(Effect.succeed))

/** One request as a protocol server got it. */
export interface Received {
  readonly method: string
  readonly path: string
  readonly headers: IncomingHttpHeaders
  /** The body parsed as JSON (`undefined` when none or not JSON). */
  readonly json: unknown
}

/** What a test model answers by default: the first bytes of a PNG file. */
export const pngBytes = new Uint8Array([0x89, 0x50, 0x4e, 0x47])

/**
 * A job API's server (TestFalServer, TestReplicateServer): every request recorded and queued for
 * `next`; result files served from `files`; any other request answered by the next scripted
 * answer, else by `normal` (a held one by `normal` once released). Answers its URL and its `host` header.
 */
export const serveScripted = (
  files: ReturnType<typeof makeFiles>,
  normal: (method: string, path: string, headers: IncomingHttpHeaders, json: unknown) => JsonAnswer
) =>
  Effect.gen(function*() {
    const received: Array<Received> = []
    const pending = yield* Queue.unbounded<Received>()
    const scripts: Array<Scripted> = []
    const { holds, respond } = makeResponder()
    const port = yield* listen((req, res, body) => {
      const path = req.url ?? "/"
      const method = req.method ?? ""
      const json = parseJson(body)
      const request: Received = { method, path, headers: req.headers, json }
      received.push(request)
      Queue.unsafeOffer(pending, request)
      if (files.serve(method, path, res)) return
      const answer = scripts.shift() ?? normal(method, path, req.headers, json)
      respond(req, res, answer, () => normal(method, path, req.headers, json))
    })
    return {
      baseUrl: `http://127.0.0.1:${port}`,
      host: `127.0.0.1:${port}`,
      received: received as ReadonlyArray<Received>,
      next: takeWithin(pending, { message: "no request within 5 s", live: true }),
      script: (...answers: ReadonlyArray<Scripted>) => {
        scripts.push(...answers)
      },
      release: holds.release
    }
  })
