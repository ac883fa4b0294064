/**
 * A fetch-style server for tests: a handler from web `Request` to `Response` (as Hono, Next.js
 * route handlers, Deno and workers have it) served on a real socket, 127.0.0.1, port 0. Node's
 * `http` server does the listening; each request becomes a web `Request` whose body streams from
 * the socket, as in the Node adapters of those frameworks; each response body is written chunk by
 * chunk as the handler's stream gives it (an event stream reaches the client as it is sent), and a
 * body stream that errors breaks the connection. Closed with the scope.
 */
import { Effect } from "effect"
import { createServer, type IncomingMessage } from "node:http"

/** A fetch-style request handler. */
export type FetchHandler = (request: Request) => Promise<Response>

const toRequest = (req: IncomingMessage, origin: string): Request => {
  const headers = new Headers()
  for (const [name, value] of Object.entries(req.headers)) {
    if (typeof value === "string") headers.set(name, value)
    else if (Array.isArray(value)) { for (const v of value) headers.append(name, v) }
  }
  const hasBody = req.method !== "GET" && req.method !== "HEAD"
  // The body streams from the socket as it arrives, as a web stream.
  const body = new ReadableStream<Uint8Array>({
    start: (controller) => {
      req.on("data", (chunk: Buffer) => controller.enqueue(new Uint8Array(chunk)))
      req.on("end", () => controller.close())
      req.on("error", (error) => controller.error(error))
    }
  })
  return new Request(new URL(req.url ?? "/", origin), {
    method: req.method ?? "GET",
    headers,
    ...(hasBody ? { body, duplex: "half" } : {})
  })
}

/** Serves `handler` until the scope closes; returns its base URL. */
export const serveFetch = (handler: FetchHandler) =>
  Effect.acquireRelease(
    Effect.async<{ readonly url: string; readonly close: Effect.Effect<void> }>((resume) => {
      let origin = ""
      const server = createServer((req, res) => {
        handler(toRequest(req, origin)).then(
          async (response) => {
            res.writeHead(response.status, Object.fromEntries(response.headers))
            res.flushHeaders()
            const reader = response.body?.getReader()
            if (reader === undefined) return void res.end()
            res.on("close", () => void reader.cancel().catch(() => undefined))
            try {
              for (let read = await reader.read(); !read.done; read = await reader.read()) res.write(read.value)
              res.end()
            } catch {
              // What was written goes out first; the response is left unfinished, as a cut connection leaves it.
              res.socket?.end()
            }
          },
          (error: unknown) => res.writeHead(500).end(String(error))
        )
      })
      const close = Effect.async<void>((done) => {
        server.closeAllConnections()
        server.close(() => done(Effect.void))
      })
      server.listen(0, "127.0.0.1", () => {
        const address = server.address()
        origin = `http://127.0.0.1:${typeof address === "object" && address !== null ? address.port : 0}`
        resume(Effect.succeed({ url: origin, close }))
      })
    }),
    (served) => served.close
  ).pipe(Effect.map((served) => served.url))
