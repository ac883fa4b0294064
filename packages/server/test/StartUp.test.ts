/**
 * No request is lost while `appexec serve` starts (docs/operations.md#start-up), on SQLite and on
 * PostgreSQL: from the moment the process is spawned, a client tries a new connection every few
 * milliseconds until the port accepts, then keeps opening connections as fast as that; every
 * request sent on an accepted connection gets an answer, also those that arrive before the app
 * is built.
 */
import { describe, expect, it } from "@effect/vitest"
import { Deferred, Effect, Fiber } from "effect"
import { connect, createServer } from "node:net"
import { backends } from "./support/Backends.js"
import { spawnAppexec, tempDataDir } from "./support/ServeProcess.js"

/**
 * A port of 127.0.0.1 that was free a moment ago (bound on port 0, then closed): the client must
 * know where the server will listen before the server can say it.
 */
const freePort = Effect.async<number, Error>((resume) => {
  const probe = createServer()
  probe.once("error", (error) => resume(Effect.fail(error)))
  probe.listen(0, "127.0.0.1", () => {
    const address = probe.address()
    probe.close(() =>
      typeof address === "object" && address !== null
        ? resume(Effect.succeed(address.port))
        : resume(Effect.fail(new Error("no port")))
    )
  })
})

/** What became of one request: the port refused the connection, the status of its answer, or no answer. */
type Outcome =
  | { readonly _tag: "Refused" }
  | { readonly _tag: "Answered"; readonly path: string; readonly status: number }
  | { readonly _tag: "Lost"; readonly path: string; readonly why: string }

/**
 * `GET path` on a new connection to `port`: whether the port accepted it (known as soon as it
 * does or refuses), and its `answer`, waited for at most `withinMs`.
 */
const request = (port: number, path: string, withinMs: number) =>
  Effect.gen(function*() {
    const connected = yield* Deferred.make<boolean>()
    const answer = Effect.async<Outcome>((resume) => {
      const socket = connect({ port, host: "127.0.0.1" })
      let accepted = false
      let received = ""
      let settled = false
      const settle = (outcome: Outcome) => {
        if (settled) return
        settled = true
        clearTimeout(timer)
        socket.destroy()
        Deferred.unsafeDone(connected, Effect.succeed(accepted))
        resume(Effect.succeed(outcome))
      }
      const timer = setTimeout(() => settle({ _tag: "Lost", path, why: `no answer within ${withinMs} ms` }), withinMs)
      socket.once("connect", () => {
        accepted = true
        Deferred.unsafeDone(connected, Effect.succeed(true))
        socket.write(`GET ${path} HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nConnection: close\r\n\r\n`)
      })
      socket.on("data", (chunk: Buffer) => {
        received += chunk.toString("latin1")
        const status = /^HTTP\/1\.1 (\d{3}) /.exec(received)
        if (status !== null) settle({ _tag: "Answered", path, status: Number(status[1]) })
      })
      socket.on("error", (error: NodeJS.ErrnoException) => {
        if (!accepted && error.code === "ECONNREFUSED") settle({ _tag: "Refused" })
        else settle({ _tag: "Lost", path, why: `${error.code ?? error.message} before an answer` })
      })
      socket.once("close", () => settle({ _tag: "Lost", path, why: "closed without an answer" }))
    })
    const fiber = yield* Effect.fork(answer)
    return { accepted: yield* Deferred.await(connected), answer: Fiber.join(fiber) }
  })

/** The paths asked in turn: the health check, and an API route (no key: 401 once the app answers). */
const paths = ["/healthz", "/v1/apps"] as const

for (const backend of backends) {
  describe(`appexec serve starting, on ${backend.name}`, () => {
    it.live(
      "answers every request sent from the moment it is spawned, also those that arrive before the app is built",
      () =>
        Effect.gen(function*() {
          const env = yield* backend.env
          const port = yield* freePort
          const serve = yield* spawnAppexec(["serve", "--port", String(port), "--data", yield* tempDataDir], env)
          const answers: Array<Effect.Effect<Outcome>> = []
          let sentBeforeReady = 0
          // A connection every 5 ms until the port accepts (at most 6,000 tries: 30 s and more),
          // then 40 more, each as soon as the one before was accepted.
          for (let tries = 0; tries < 6_000 && answers.length < 41; tries++) {
            const path = paths[answers.length % paths.length]!
            const attempt = yield* request(port, path, 30_000)
            if (attempt.accepted) {
              answers.push(attempt.answer)
              if (!serve.output.stdout.includes("appexec is listening")) sentBeforeReady++
            } else {
              yield* Effect.sleep("5 millis")
            }
          }
          expect(answers.length).toBe(41)
          const outcomes = yield* Effect.all(answers, { concurrency: "unbounded" })
          expect(outcomes.filter((o) => o._tag !== "Answered")).toEqual([])
          for (const outcome of outcomes) {
            if (outcome._tag === "Answered") {
              expect([outcome.path, outcome.status]).toEqual([outcome.path, outcome.path === "/healthz" ? 200 : 401])
            }
          }
          // The test saw the window it is about: requests accepted before the server said it listens.
          expect(sentBeforeReady).toBeGreaterThan(0)
        }).pipe(Effect.scoped),
      90_000
    )
  })
}
