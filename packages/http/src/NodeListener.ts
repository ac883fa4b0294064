/**
 * appexec on Node's `http` server: the app as a `(req, res)` listener, to mount on a host's own
 * server (under a base path if the host likes: `{ basePath: "/api" }`), or alone on a server of
 * its own (`serve`). The request is handed to the app as it is (headers, socket address, the body
 * read only when an endpoint asks for it) and the answer is written in one `writeHead` + `end`. A
 * request whose client goes away before its answer is interrupted.
 */
import { Effect, Exit, FiberId, type Layer, Runtime, type Scope } from "effect"
import { createServer, type IncomingHttpHeaders, type IncomingMessage, type ServerResponse } from "node:http"
import type { AddressInfo } from "node:net"
import * as AppexecHttp from "./AppexecHttp.js"
import { type BodyFailure, DRAIN_FACTOR, type ServerRequest } from "./internal/Exchange.js"

/** A Node request listener. */
export type Listener = (request: IncomingMessage, response: ServerResponse) => void

/** Node's headers as the app reads them: one string per name (a repeated header's values joined). */
const headersOf = (headers: IncomingHttpHeaders): Readonly<Record<string, string | undefined>> => {
  const flat: Record<string, string> = {}
  for (const name in headers) {
    const value = headers[name]
    if (value !== undefined) flat[name] = typeof value === "string" ? value : value.join(", ")
  }
  return flat
}

/** Reads the body of `message`, at most `maxBytes` (the rest drained up to a bound, then the connection dropped). */
const readBody = (message: IncomingMessage, maxBytes: number) =>
  Effect.async<Uint8Array, BodyFailure>((resume) => {
    const chunks: Array<Buffer> = []
    let size = 0
    const cleanup = () => {
      message.off("data", onData)
      message.off("end", onEnd)
      message.off("error", onError)
      message.off("aborted", onError)
    }
    const onData = (chunk: Buffer) => {
      size += chunk.length
      if (size > maxBytes * DRAIN_FACTOR) {
        cleanup()
        message.destroy()
        resume(Effect.fail({ _tag: "TooLarge" }))
      } else if (size <= maxBytes) chunks.push(chunk)
    }
    const onEnd = () => {
      cleanup()
      resume(
        size > maxBytes
          ? Effect.fail({ _tag: "TooLarge" })
          : Effect.succeed(new Uint8Array(Buffer.concat(chunks, size)))
      )
    }
    const onError = () => {
      cleanup()
      resume(Effect.fail({ _tag: "Unreadable" }))
    }
    message.on("data", onData)
    message.once("end", onEnd)
    message.once("error", onError)
    message.once("aborted", onError)
    return Effect.sync(cleanup)
  })

const requestOf = (message: IncomingMessage): ServerRequest => ({
  method: message.method ?? "GET",
  url: message.url ?? "/",
  headers: headersOf(message.headers),
  remoteAddress: message.socket.remoteAddress,
  body: (maxBytes) => readBody(message, maxBytes)
})

/** The listener of an app made with `AppexecHttp.make`. */
export const fromApp = (app: AppexecHttp.App): Listener => {
  const fork = Runtime.runFork(app.runtime)
  return (message, response) => {
    const answer = (exit: Exit.Exit<AppexecHttp.ServerResponse>) => {
      if (response.writableEnded || response.destroyed) return
      if (Exit.isSuccess(exit)) {
        response.writeHead(exit.value.status, exit.value.headers)
        response.end(exit.value.body)
      } else {
        // The app answers every failure itself; only an interruption (shutdown) ends here.
        response.writeHead(503, { "content-type": "application/json", connection: "close" })
        response.end(JSON.stringify({ error: { code: "internal_error", message: "The server is stopping." } }))
      }
    }
    // Started at once on this call's stack, not on the next scheduler turn: most requests never
    // suspend, and are answered before the listener returns.
    const fiber = fork(app.handle(requestOf(message)), { immediate: true })
    const done = fiber.unsafePoll()
    if (done !== null) return answer(done)
    fiber.addObserver(answer)
    response.once("close", () => {
      if (!response.writableEnded) fiber.unsafeInterruptAsFork(FiberId.none)
    })
  }
}

/** The listener, inside an Effect program that provides appexec; it serves while the scope is open. */
export const make = (
  options: AppexecHttp.Options = {}
): Effect.Effect<Listener, never, AppexecHttp.Requirements | Scope.Scope> =>
  Effect.map(AppexecHttp.make(options), fromApp)

/** Where `serve` listens: port 0 (any free port) on 127.0.0.1 unless told otherwise. */
export interface ServeOptions extends AppexecHttp.Options {
  readonly port?: number
  readonly host?: string
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
    const { port = 0, host = "127.0.0.1", ...http } = options
    const listener = yield* make(http)
    const server = yield* Effect.acquireRelease(Effect.sync(() => createServer(listener)), (server) =>
      Effect.async<void>((resume) => {
        server.closeAllConnections()
        server.close(() =>
          resume(Effect.void)
        )
      }))
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
