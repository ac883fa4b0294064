/**
 * Local HTTP servers on 127.0.0.1 (port 0) that speak a model provider's protocol, for the tests
 * of the provider nodes: a scripted server whose handler answers, resets the connection or never
 * answers, and on top of it the documented endpoints of Replicate's predictions and fal's queue.
 * Every request is recorded, and a test can wait for the n-th one.
 */
import { Deferred, Effect, FiberId } from "effect"
import { createServer, type IncomingHttpHeaders, type Server } from "node:http"
import type { AddressInfo } from "node:net"

/** A recorded request. */
export interface Received {
  readonly method: string
  readonly path: string
  readonly headers: IncomingHttpHeaders
  readonly body: string
}

/** What the server does with a request: answer it, reset the connection, or never answer. */
export type Reply =
  | {
    readonly status?: number
    readonly headers?: Readonly<Record<string, string>>
    readonly body?: Uint8Array | string
    readonly json?: unknown
  }
  | "reset"
  | "hang"

/** A running scripted server. */
export interface Scripted {
  /** The absolute URL of `path` on this server. */
  readonly url: (path: string) => string
  /** `host:port`, as the execution's log names it. */
  readonly host: string
  /** Every request so far, in order. */
  readonly received: ReadonlyArray<Received>
  /** Waits until the server has received `n` requests. */
  readonly requests: (n: number) => Effect.Effect<ReadonlyArray<Received>>
  readonly server: Server
}

/** Starts a server that replies to each request with `handle(request, base URL)`; it stops with the scope. */
export const start = (handle: (request: Received, base: string) => Reply) =>
  Effect.acquireRelease(
    Effect.async<Scripted>((resume) => {
      const received: Array<Received> = []
      const waiting: Array<{ n: number; done: Deferred.Deferred<ReadonlyArray<Received>> }> = []
      let base = ""
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
          const reply = handle(request, base)
          if (reply === "reset") req.socket.destroy()
          else if (reply !== "hang") {
            const body = reply.json !== undefined
              ? Buffer.from(JSON.stringify(reply.json))
              : reply.body === undefined
              ? Buffer.alloc(0)
              : Buffer.from(reply.body)
            res.writeHead(reply.status ?? 200, {
              "content-length": String(body.length),
              ...(reply.json !== undefined ? { "content-type": "application/json" } : {}),
              ...reply.headers
            })
            res.end(body)
          }
          for (const wait of waiting.filter((w) => received.length >= w.n)) {
            waiting.splice(waiting.indexOf(wait), 1)
            Deferred.unsafeDone(wait.done, Effect.succeed([...received]))
          }
        })
      })
      server.listen(0, "127.0.0.1", () => {
        const { port } = server.address() as AddressInfo
        base = `http://127.0.0.1:${port}`
        resume(Effect.succeed({
          url: (path: string) => `${base}${path}`,
          host: `127.0.0.1:${port}`,
          received,
          requests: (n: number) =>
            Effect.suspend(() => {
              if (received.length >= n) return Effect.succeed([...received])
              const done = Deferred.unsafeMake<ReadonlyArray<Received>>(FiberId.none)
              waiting.push({ n, done })
              return Deferred.await(done)
            }),
          server
        }))
      })
    }),
    ({ server }) =>
      Effect.async<void>((resume) => {
        server.closeAllConnections()
        server.close(() => resume(Effect.void))
      })
  )
