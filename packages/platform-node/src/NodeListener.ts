/**
 * appexec on Node's `http` server: the app as a `(req, res)` listener, to mount on a host's own
 * server (under a base path if the host likes: `{ basePath: "/api" }`), or alone on a server of
 * its own (`serve`). The request is handed to the app as it is (headers, socket address, the path
 * as the client sent it even where a framework stripped its mount prefix, the body read only when
 * an endpoint asks for it, or taken from what a host's body parser made of it: see
 * `internal/IncomingRequest.ts`) and the answer is written in one `writeHead` + `end`,
 * once what is left of the body has been read and dropped (up to `MAX_DRAIN_BYTES`); a streamed
 * answer (an event stream) sends its headers at once and each chunk as it comes (see `pipeBody`).
 * The requests of one turn of the event loop are answered together at its end (see `fromApp`). A
 * request whose client goes away before its answer is interrupted.
 */
import { AppexecHttp, Exchange } from "@appexec/http"
import { Duration, Effect, Exit, FiberId, type Layer, Runtime, type Scope } from "effect"
import {
  createServer as createNodeServer,
  type IncomingMessage,
  type Server,
  type ServerResponse,
  STATUS_CODES
} from "node:http"
import type { AddressInfo, Socket } from "node:net"
import * as IncomingRequest from "./internal/IncomingRequest.js"
import * as SlicedScheduler from "./internal/SlicedScheduler.js"
import { pipeBody, type Runner } from "./internal/StreamedAnswer.js"

/** A Node request listener. */
export type Listener = (request: IncomingMessage, response: ServerResponse) => void

const stopping = JSON.stringify({ error: { code: "internal_error", message: "The server is stopping." } })

/** Gives back what a streamed answer holds when it will not be written (its client went away first). */
const discard = (run: Runner, exit: Exit.Exit<AppexecHttp.ServerResponse>) => {
  if (Exit.isSuccess(exit) && Exchange.isStreamed(exit.value.body)) run.fork(exit.value.body.release)
}

/**
 * How much of a request body that was not read (refused before it was, or past its bound) is
 * read and dropped before the answer is written: 16 MiB (docs/http.md#request-bodies).
 */
export const MAX_DRAIN_BYTES = 16 * 1024 * 1024

/**
 * Writes the app's answer to `message` (or, for an interruption, a 503) on `response`, unless it
 * is gone. What the client is still sending of the body is read and dropped first, up to
 * `MAX_DRAIN_BYTES`: a connection closed with unread data is reset, and the reset would destroy
 * the answer before the client reads it (a 413 seen as EPIPE). Past the bound the answer is
 * written with `Connection: close`. A 408 (an upload cut for its pace) is written at once with
 * `Connection: close`: its client is the one too slow to wait for.
 */
const write = (
  run: Runner,
  message: IncomingMessage,
  response: ServerResponse,
  exit: Exit.Exit<AppexecHttp.ServerResponse>
) => {
  if (response.writableEnded || response.destroyed) return discard(run, exit)
  if (message.complete || message.readableEnded || message.destroyed) {
    return writeNow(run, message, response, exit, false)
  }
  // A body cut for arriving too slowly (408) is not waited for: answered at once, and closed.
  if (Exit.isSuccess(exit) && exit.value.status === 408) return writeNow(run, message, response, exit, true)
  let dropped = 0
  const done = (whole: boolean) => {
    message.off("data", onData)
    message.off("end", onEnd)
    response.off("close", onGone)
    guarded(run, response, exit, () => writeNow(run, message, response, exit, !whole))
  }
  const onData = (chunk: Buffer) => {
    dropped += chunk.length
    if (dropped > MAX_DRAIN_BYTES) done(false)
  }
  const onEnd = () => done(true)
  const onGone = () => {
    message.off("data", onData)
    message.off("end", onEnd)
    discard(run, exit)
  }
  message.on("data", onData)
  message.once("end", onEnd)
  response.once("close", onGone)
  message.resume()
}

/** Writes the answer at once; `close` adds `Connection: close`. */
const writeNow = (
  run: Runner,
  message: IncomingMessage,
  response: ServerResponse,
  exit: Exit.Exit<AppexecHttp.ServerResponse>,
  close: boolean
) => {
  if (response.writableEnded || response.destroyed) return discard(run, exit)
  if (Exit.isSuccess(exit)) {
    const { body, headers, status } = exit.value
    // With its length, a body goes out as it is: without, Node frames it in chunks.
    const framed = close ? Object.assign({}, headers, { connection: "close" }) : headers
    if (Exchange.isStreamed(body)) return pipeBody(run, message, response, { status, headers: framed }, body)
    response.writeHead(
      status,
      body === undefined || status === 204 || status === 304 || message.method === "HEAD"
        ? framed
        : Object.assign({}, framed, {
          "content-length": typeof body === "string" ? Buffer.byteLength(body) : body.byteLength
        })
    )
    response.end(body)
  } else {
    // The app answers every failure itself; only an interruption (shutdown) ends here.
    response.writeHead(503, { "content-type": "application/json", connection: "close" })
    response.end(stopping)
  }
}

/**
 * Runs `f`, the write of `exit`; an answer Node refuses to write (say, a header it rejects) ends
 * its own connection only, and what it holds is given back.
 */
const guarded = (
  run: Runner,
  response: ServerResponse,
  exit: Exit.Exit<AppexecHttp.ServerResponse>,
  f: () => void
) => {
  try {
    f()
  } catch (error) {
    response.destroy(error instanceof Error ? error : new Error(String(error)))
    discard(run, exit)
  }
}

/**
 * Answers written together: `send` queues one and the queue is written at the end of the turn
 * (`setImmediate`), or at the end of `gather` for the answers made while it runs.
 */
const makeOutbox = (run: Runner) => {
  let queued: Array<readonly [IncomingMessage, ServerResponse, Exit.Exit<AppexecHttp.ServerResponse>]> = []
  let scheduled = false
  let gathering = false
  const flush = () => {
    scheduled = false
    const batch = queued
    queued = []
    for (const [message, response, exit] of batch) {
      guarded(run, response, exit, () => write(run, message, response, exit))
    }
  }
  const send = (message: IncomingMessage, response: ServerResponse, exit: Exit.Exit<AppexecHttp.ServerResponse>) => {
    queued.push([message, response, exit])
    if (!scheduled && !gathering) {
      scheduled = true
      setImmediate(flush)
    }
  }
  const gather = (f: () => void) => {
    gathering = true
    try {
      f()
    } finally {
      gathering = false
    }
    flush()
  }
  return { send, gather }
}

/** How many requests of a turn are handled before their answers are written. */
const WRITE_EVERY = 64

/**
 * The listener of an app made with `AppexecHttp.make`.
 *
 * The requests Node reads in one turn of the event loop are answered together at its end (its
 * check phase, `setImmediate`): each runs as a fiber of its own, started one after the other, so
 * their authentications share one read of the key revision (the facade's memo; a key revoked
 * before the turn's requests arrived is refused), and the answers ready then are written one
 * after the other (every `WRITE_EVERY` requests). The app's work and the socket writes then each
 * run many times in a row, which keeps both in the processor's caches, and a client waiting on
 * several connections is woken once for a batch of answers rather than once per answer: on the
 * benchmark's machine this nearly doubled the polls one core serves (docs/performance.md). A
 * request waits at most until the end of the turn that read it; an answer that takes longer is
 * written at the end of the turn it is made in. Streamed answers run a slice at a time
 * (`SlicedScheduler`): 2,000 event streams woken by one change of an execution leave the polls
 * that arrive meanwhile answered between slices, not after all of them.
 */
export const fromApp = (app: AppexecHttp.App): Listener => {
  const run: Runner = { fork: Runtime.runFork(app.runtime), streams: SlicedScheduler.make() }
  const outbox = makeOutbox(run)
  const requestOf = IncomingRequest.adapter()
  const handle = (message: IncomingMessage, response: ServerResponse) => {
    // Started at once on this call's stack, not on the next scheduler turn: most requests never suspend.
    const fiber = run.fork(app.handle(requestOf(message)), { immediate: true })
    const done = fiber.unsafePoll()
    if (done !== null) return outbox.send(message, response, done)
    fiber.addObserver((exit) => outbox.send(message, response, exit))
    response.once("close", () => {
      if (!response.writableEnded) fiber.unsafeInterruptAsFork(FiberId.none)
    })
  }
  let inbox: Array<readonly [IncomingMessage, ServerResponse]> = []
  const answerInbox = () => {
    const batch = inbox
    inbox = []
    // Written `WRITE_EVERY` at a time, so that a turn of many requests delays its first answers little.
    for (let from = 0; from < batch.length; from += WRITE_EVERY) {
      outbox.gather(() => {
        for (const [message, response] of batch.slice(from, from + WRITE_EVERY)) handle(message, response)
      })
    }
  }
  return (message, response) => {
    // HTTP/1.1 requires Host (RFC 9112 §3.2); Node's own refusal of it has no body, so it is answered here.
    if (message.headers.host === undefined && message.httpVersion === "1.1") {
      const { body, headers, status } = Exchange.invalidRequest("An HTTP/1.1 request must have a Host header.")
      response.writeHead(status, { ...headers, connection: "close" })
      return void response.end(body)
    }
    if (inbox.length === 0) setImmediate(answerInbox)
    inbox.push([message, response])
  }
}

/** The listener, inside an Effect program that provides appexec; it serves while the scope is open. */
export const make = (
  options: AppexecHttp.Options = {}
): Effect.Effect<Listener, never, AppexecHttp.Requirements | Scope.Scope> =>
  Effect.map(AppexecHttp.make(options), fromApp)

/**
 * How a server guards its connections (docs/http.md#connections). Every limit has a default, so a
 * client that opens sockets and sends nothing, or sends slowly, holds them only for a bounded
 * time and only up to its share.
 */
export interface ConnectionOptions {
  /** Open connections the whole server accepts; more are closed at once (default 10,000). */
  readonly maxConnections?: number
  /**
   * Open connections one client address may hold; more are answered 429 and closed (default 100).
   * Behind a proxy every connection comes from the proxy: raise it to what the proxy opens.
   */
  readonly maxConnectionsPerIp?: number
  /** Time a client has to send a request's headers, from its connection or its previous request (default 10 s). */
  readonly headersTimeout?: Duration.DurationInput
  /** Time a client has to send a whole request, headers and body (default 30 s). */
  readonly requestTimeout?: Duration.DurationInput
  /** How long an idle keep-alive connection stays open after an answer (default 5 s). */
  readonly keepAliveTimeout?: Duration.DurationInput
}

/** The defaults of `ConnectionOptions`. */
export const connectionDefaults = {
  maxConnections: 10_000,
  maxConnectionsPerIp: 100,
  headersTimeout: Duration.seconds(10),
  requestTimeout: Duration.seconds(30),
  keepAliveTimeout: Duration.seconds(5)
} as const

/** Whole milliseconds of a duration, at least `min` (an unusable value takes the default). */
const millisOf = (input: Duration.DurationInput | undefined, fallback: Duration.Duration, min = 1) => {
  const decoded = input === undefined ?
    fallback :
    Duration.decodeUnknown(input).pipe((o) => o._tag === "Some" && Duration.isFinite(o.value) ? o.value : fallback)
  return Math.max(min, Math.round(Duration.toMillis(decoded)))
}

/** A count of at least 1, or the default. */
const countOf = (n: number | undefined, fallback: number) =>
  n === undefined || !Number.isFinite(n) || n < 1 ? fallback : Math.floor(n)

/** An error answer as raw HTTP/1.1 with `Connection: close`, for a socket the HTTP parser gave up on. */
const rawAnswer = ({ body, status }: Exchange.ServerResponse): string => {
  const text = typeof body === "string" ? body : ""
  return `HTTP/1.1 ${status} ${STATUS_CODES[status] ?? ""}\r\ncontent-type: application/json\r\n` +
    `content-length: ${Buffer.byteLength(text)}\r\nconnection: close\r\n\r\n${text}`
}

/** Answers of the parser-level failures, built once. */
const parserAnswers = {
  timeout: rawAnswer(
    Exchange.errorAnswer(408, { code: "invalid_request", message: "The request was not received in time." })
  ),
  headersTooLarge: rawAnswer(
    Exchange.errorAnswer(431, { code: "invalid_request", message: "The request headers are too large." })
  ),
  malformed: rawAnswer(Exchange.invalidRequest("The request is not valid HTTP.")),
  tooManyConnections: rawAnswer(Exchange.apiErrorAnswer({
    code: "rate_limited",
    message: "Too many open connections from your address; close some and retry."
  }))
}

const codeOf = (error: Error): string | undefined =>
  "code" in error && typeof error.code === "string" ? error.code : undefined

/** Whether an answer already began on `socket` (Node's own check before it writes a parser error). */
const answerBegun = (socket: Socket): boolean => {
  const message: unknown = Reflect.get(socket, "_httpMessage")
  return typeof message === "object" && message !== null && "headersSent" in message && message.headersSent === true
}

/** The address a connection counts against: an IPv4-mapped IPv6 address as its IPv4 address. */
const clientAddressOf = (socket: Socket) => (socket.remoteAddress ?? "").replace(/^::ffff:(?=\d+\.)/, "")

/**
 * A Node `http.Server` that guards its connections (`options`): headers and whole requests are
 * bounded in time (checked every second at least), idle keep-alive connections are closed, the
 * server and each client address are capped in open connections, and what the HTTP parser
 * refuses (bad HTTP, headers too large, too slow) is answered 400, 431 or 408 with the error body.
 * Attach the listener with `server.on("request", listener)`.
 */
export const createServer = (options: ConnectionOptions = {}): Server => {
  const requestTimeout = millisOf(options.requestTimeout, connectionDefaults.requestTimeout)
  const headersTimeout = Math.min(millisOf(options.headersTimeout, connectionDefaults.headersTimeout), requestTimeout)
  const perIp = countOf(options.maxConnectionsPerIp, connectionDefaults.maxConnectionsPerIp)
  const server = createNodeServer({
    // A request without Host is answered by the listener, with the error body (`fromApp`).
    requireHostHeader: false,
    headersTimeout,
    requestTimeout,
    keepAliveTimeout: millisOf(options.keepAliveTimeout, connectionDefaults.keepAliveTimeout),
    // Node checks the two timeouts on this interval (30 s by default, which lets them run long).
    connectionsCheckingInterval: Math.max(50, Math.min(1_000, Math.floor(headersTimeout / 4)))
  })
  server.maxConnections = countOf(options.maxConnections, connectionDefaults.maxConnections)
  const open = new Map<string, number>()
  server.on("connection", (socket: Socket) => {
    const address = clientAddressOf(socket)
    const count = (open.get(address) ?? 0) + 1
    if (count > perIp) {
      socket.end(parserAnswers.tooManyConnections)
      socket.destroySoon()
      return
    }
    open.set(address, count)
    socket.once("close", () => {
      const left = (open.get(address) ?? 1) - 1
      if (left <= 0) open.delete(address)
      else open.set(address, left)
    })
  })
  server.on("clientError", (error: Error, socket: Socket) => {
    const code = codeOf(error)
    // A reset or an aborted connection: nobody is left to answer.
    if (code === "ECONNRESET" || !socket.writable || answerBegun(socket)) return void socket.destroy()
    const answer = code === "ERR_HTTP_REQUEST_TIMEOUT"
      ? parserAnswers.timeout
      : code === "HPE_HEADER_OVERFLOW"
      ? parserAnswers.headersTooLarge
      : parserAnswers.malformed
    socket.end(answer)
    socket.destroySoon()
  })
  return server
}

/** Where `serve` listens: port 0 (any free port) on 127.0.0.1 unless told otherwise; how it guards connections. */
export interface ServeOptions extends AppexecHttp.Options {
  readonly port?: number
  readonly host?: string
  readonly connections?: ConnectionOptions
}

/**
 * appexec alone on a Node `http.Server` of its own, listening until the scope closes (then open
 * connections are closed too); the base URL it answers at.
 *
 * ```ts
 * const { url } = yield* NodeListener.serve({ port: 8080 })
 * ```
 */
export const serve = (
  options: ServeOptions = {}
): Effect.Effect<{ readonly url: string }, never, AppexecHttp.Requirements | Scope.Scope> =>
  Effect.gen(function*() {
    const { connections, host = "127.0.0.1", port = 0, ...http } = options
    const listener = yield* make(http)
    const server = yield* Effect.acquireRelease(
      Effect.sync(() => createServer(connections).on("request", listener)),
      (server) =>
        Effect.async<void>((resume) => {
          // After the answers already made (the listener writes them at the end of the turn).
          setImmediate(() => {
            server.closeAllConnections()
            server.close(() => resume(Effect.void))
          })
        })
    )
    const bound = yield* Effect.async<number>((resume) => {
      server.listen(port, host, () => resume(Effect.succeed((server.address() as AddressInfo).port)))
    })
    return { url: `http://${host.includes(":") ? `[${host}]` : host}:${bound}` }
  })

/**
 * The listener for a host that does not use Effect: `layer` provides appexec (for example
 * `AppexecLayer.make()` over a storage). `dispose` stops it and releases the layer.
 */
export const fromLayer = async <E>(
  layer: Layer.Layer<AppexecHttp.Requirements, E>,
  options: AppexecHttp.Options = {}
): Promise<{ readonly listener: Listener; readonly dispose: () => Promise<void> }> => {
  const { app, dispose } = await AppexecHttp.fromLayer(layer, options)
  return { listener: fromApp(app), dispose }
}
