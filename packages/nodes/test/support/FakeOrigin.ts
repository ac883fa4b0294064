/**
 * A local HTTP server on 127.0.0.1 (port 0) for tests: media origins and fake providers. Each
 * route answers with a fixed status, headers and body, or computes its answer from the request;
 * every request is recorded.
 */
import { Effect } from "effect"
import { createServer, type IncomingHttpHeaders, type Server } from "node:http"
import type { AddressInfo } from "node:net"

/** A recorded request. */
export interface Received {
  readonly method: string
  readonly path: string
  readonly headers: IncomingHttpHeaders
  readonly body: string
}

/** An answer of the fake server. */
export interface Answer {
  readonly status?: number
  readonly headers?: Readonly<Record<string, string>>
  readonly body?: Uint8Array | string
}

/** A route: a fixed answer or a function of the request. */
export type Route = Answer | ((request: Received) => Answer)

/** A running fake server. */
export interface FakeOrigin {
  /** The absolute URL of `path` on this server. */
  readonly url: (path: string) => string
  /** Every request so far, in order. */
  readonly received: ReadonlyArray<Received>
  readonly server: Server
}

/** Starts a server with `routes` (by path, query included when the key has one); it stops with the scope. */
export const start = (routes: Readonly<Record<string, Route>>) =>
  Effect.acquireRelease(
    Effect.async<FakeOrigin>((resume) => {
      const received: Array<Received> = []
      const server = createServer((req, res) => {
        const chunks: Array<Buffer> = []
        req.on("data", (chunk: Buffer) => chunks.push(chunk))
        req.on("end", () => {
          const request: Received = {
            method: req.method ?? "GET",
            path: req.url ?? "/",
            headers: req.headers,
            body: Buffer.concat(chunks).toString("utf8")
          }
          received.push(request)
          const route = routes[request.path] ?? routes[request.path.split("?")[0]!]
          const answer: Answer = route === undefined
            ? { status: 404, body: "no such route" }
            : typeof route === "function"
            ? route(request)
            : route
          const body = answer.body === undefined ? Buffer.alloc(0) : Buffer.from(answer.body)
          res.writeHead(answer.status ?? 200, { "content-length": String(body.length), ...answer.headers })
          res.end(body)
        })
      })
      server.listen(0, "127.0.0.1", () => {
        const { port } = server.address() as AddressInfo
        resume(Effect.succeed({ url: (path: string) => `http://127.0.0.1:${port}${path}`, received, server }))
      })
    }),
    ({ server }) =>
      Effect.async<void>((resume) => {
        server.closeAllConnections()
        server.close(() => resume(Effect.void))
      })
  )
