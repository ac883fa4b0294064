/**
 * `appexec serve` guards its connections with the limits its flags set: one address gets at
 * most `--max-connections-per-ip` (one more is answered 429 and closed), and a socket that sends
 * no request is answered 408 with the error body once `--headers-timeout` has passed.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { connect, type Socket } from "node:net"
import { startServe, tempDataDir } from "./support/ServeProcess.js"

const open = (port: number) =>
  Effect.async<Socket, Error>((resume) => {
    const socket = connect({ port, host: "127.0.0.1" })
    socket.once("connect", () => resume(Effect.succeed(socket)))
    socket.once("error", (error) => resume(Effect.fail(error)))
  })

/** What the server wrote to `socket` until it closed it, and after how many ms. */
const closed = (socket: Socket) =>
  Effect.async<{ readonly text: string; readonly ms: number }>((resume) => {
    const started = performance.now()
    let text = ""
    socket.on("data", (c: Buffer) => (text += c.toString()))
    socket.on("error", () => {})
    socket.once("close", () => resume(Effect.succeed({ text, ms: performance.now() - started })))
  })

describe("serve's connection limits", () => {
  it.scopedLive("--max-connections-per-ip and --headers-timeout hold on the real server", () =>
    Effect.gen(function*() {
      const dataDir = yield* tempDataDir
      const serve = yield* startServe(dataDir, ["--max-connections-per-ip", "5", "--headers-timeout", "1s"])
      const port = Number(new URL(serve.baseUrl).port)
      const held = yield* Effect.forEach([1, 2, 3, 4, 5], () => open(port))
      const answers = held.map(closed)
      const refused = yield* closed(yield* open(port))
      expect(refused.text).toMatch(/^HTTP\/1\.1 429 /)
      expect(refused.text).toContain("\"code\":\"rate_limited\"")
      for (const answer of yield* Effect.all(answers)) {
        expect(answer.text).toMatch(/^HTTP\/1\.1 408 /)
        expect(answer.text).toContain("\"code\":\"invalid_request\"")
        expect(answer.ms).toBeLessThan(3_000)
      }
    }), 30_000)
})
