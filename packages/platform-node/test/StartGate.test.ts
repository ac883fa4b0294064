/**
 * The start gate on a real server (docs/operations.md#start-up): requests that arrive before the
 * app is there wait and are handed to it in order once it is; if it never comes they are answered
 * 503 with `Retry-After` and the error body, and so is every later one.
 */
import { describe, expect, it } from "@effect/vitest"
import { Deferred, Effect, Fiber } from "effect"
import { request as httpRequest, type Server } from "node:http"
import type { AddressInfo } from "node:net"
import { NodeListener, StartGate } from "../src/index.js"

/** A guarded server behind a fresh gate (`Retry-After: 7`) on 127.0.0.1, port 0, closed with the scope. */
const gatedServer = Effect.acquireRelease(
  Effect.async<{ readonly gate: StartGate.StartGate; readonly server: Server; readonly port: number }>((resume) => {
    const gate = StartGate.make({ retryAfterSeconds: 7 })
    const server = NodeListener.createServer().on("request", gate.listener)
    server.listen(
      0,
      "127.0.0.1",
      () => resume(Effect.succeed({ gate, server, port: (server.address() as AddressInfo).port }))
    )
  }),
  ({ server }) =>
    Effect.async<void>((resume) => {
      server.closeAllConnections()
      server.close(() => resume(Effect.void))
    })
)

/** Resolves once `server` has received `count` requests. */
const received = (server: Server, count: number) =>
  Effect.gen(function*() {
    const done = yield* Deferred.make<void>()
    let seen = 0
    server.on("request", () => {
      if (++seen === count) Deferred.unsafeDone(done, Effect.void)
    })
    return Deferred.await(done)
  })

/** `GET path`: status, `Retry-After`, `Connection` and body. */
const get = (port: number, path: string) =>
  Effect.async<{ status: number; retryAfter?: string; connection?: string; body: string }, Error>((resume) => {
    const req = httpRequest({ host: "127.0.0.1", port, path, agent: false }, (res) => {
      let body = ""
      res.setEncoding("utf8")
      res.on("data", (text: string) => (body += text))
      res.on("end", () =>
        resume(Effect.succeed({
          status: res.statusCode ?? 0,
          ...(res.headers["retry-after"] === undefined ? {} : { retryAfter: res.headers["retry-after"] }),
          ...(res.headers.connection === undefined ? {} : { connection: res.headers.connection }),
          body
        })))
    })
    req.once("error", (error) => resume(Effect.fail(error)))
    req.end()
  })

describe("start gate", () => {
  it.scopedLive("hands the requests that waited to the listener in their order once it opens, then every later one", () =>
    Effect.gen(function*() {
      const { gate, port, server } = yield* gatedServer
      const one = yield* received(server, 1)
      const two = yield* received(server, 2)
      const first = yield* Effect.fork(get(port, "/first"))
      yield* one
      const second = yield* Effect.fork(get(port, "/second"))
      yield* two
      const order: Array<string> = []
      gate.open((request, response) => {
        order.push(request.url ?? "")
        response.writeHead(200, { "content-type": "text/plain" }).end(`answer ${order.length}`)
      })
      expect([(yield* Fiber.join(first)).body, (yield* Fiber.join(second)).body]).toEqual(["answer 1", "answer 2"])
      expect(order).toEqual(["/first", "/second"])
      expect((yield* get(port, "/later")).body).toBe("answer 3")
    }))

  it.scopedLive("answers 503 with Retry-After and the error body when it closes unopened, to waiting and later requests", () =>
    Effect.gen(function*() {
      const { gate, port, server } = yield* gatedServer
      const arrived = yield* received(server, 1)
      const waiting = yield* Effect.fork(get(port, "/healthz"))
      yield* arrived
      gate.close()
      for (const answer of [yield* Fiber.join(waiting), yield* get(port, "/v1/apps")]) {
        expect(answer.status).toBe(503)
        expect(answer.retryAfter).toBe("7")
        expect(answer.connection).toBe("close")
        expect(JSON.parse(answer.body)).toMatchObject({ error: { code: "internal_error" } })
      }
      // Opening after it closed changes nothing.
      gate.open((_, response) => void response.writeHead(200).end())
      expect((yield* get(port, "/healthz")).status).toBe(503)
    }))
})
