/**
 * An oversized request body on a real socket (docs/http.md#request-bodies): a client that is
 * still sending reads its 413, because the server reads and drops the rest of the body before
 * it answers (and closes the connection after); it never sees its write fail instead.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { request as httpRequest } from "node:http"
import { seed, stack, TestServer } from "./fixtures.js"

/** What the client saw: the answer, whether its whole body had gone out before it, and any error. */
interface Sent {
  readonly status: number
  readonly connection: string | undefined
  readonly body: string
  readonly sentBeforeAnswer: boolean
  readonly errors: ReadonlyArray<string>
}

/**
 * `POST url` with a JSON body of a little over 2 MiB, written by `node:http` in 64 KiB chunks, each
 * once the one before has gone out: with `Content-Length` or chunked, on a connection the client
 * asks to close or to keep.
 */
const postInChunks = (
  url: string,
  key: string,
  options: { readonly declared: boolean; readonly connection: "close" | "keep-alive" }
) =>
  Effect.async<Sent, Error>((resume) => {
    const head = Buffer.from("{\"inputs\":{\"prompt\":\"")
    const chunk = Buffer.alloc(64 * 1024, "a")
    const tail = Buffer.from("\"}}")
    const count = 32
    const length = head.length + count * chunk.length + tail.length
    const errors: Array<string> = []
    let finished = false
    let settled = false
    const req = httpRequest(url, {
      method: "POST",
      agent: false,
      headers: {
        "x-api-key": key,
        "content-type": "application/json",
        connection: options.connection,
        ...(options.declared ? { "content-length": String(length) } : {})
      }
    })
    req.on("finish", () => (finished = true))
    req.on("error", (error: NodeJS.ErrnoException) => {
      errors.push(error.code ?? error.message)
      if (!settled) {
        settled = true
        resume(Effect.fail(new Error(`the request failed before an answer: ${error.code ?? error.message}`)))
      }
    })
    req.on("response", (res) => {
      const sentBeforeAnswer = finished
      let body = ""
      res.setEncoding("utf8")
      res.on("data", (text: string) => (body += text))
      res.on("end", () => {
        if (settled) return
        settled = true
        resume(Effect.succeed({
          status: res.statusCode ?? 0,
          connection: res.headers.connection,
          body,
          sentBeforeAnswer,
          errors
        }))
      })
    })
    let written = 0
    const next = () => {
      if (req.destroyed) return
      if (written === count) return void req.end(tail)
      written++
      req.write(chunk, () => setImmediate(next))
    }
    req.write(head, () => setImmediate(next))
  })

describe("request body limit on a real socket", () => {
  it.live(
    "a 2 MiB body written in chunks gets its 413 in the error body once it is all sent, and no write fails",
    () =>
      Effect.gen(function*() {
        const { alice, echo } = yield* seed
        const url = `${(yield* TestServer).url}/v1/apps/${echo.appId}/executions`
        for (const declared of [true, false]) {
          for (const connection of ["close", "keep-alive"] as const) {
            const sent = yield* postInChunks(url, alice.key, { declared, connection })
            expect({ declared, connection, status: sent.status }).toEqual({ declared, connection, status: 413 })
            expect(JSON.parse(sent.body)).toEqual({
              error: { code: "payload_too_large", message: "The request body is larger than 1048576 bytes." }
            })
            expect(sent.connection).toBe("close")
            // Read to its end before the answer: an answer before it, and a close with the rest
            // unread, reset the connection under the client (EPIPE, or the answer lost).
            expect(sent.sentBeforeAnswer).toBe(true)
            expect(sent.errors).toEqual([])
          }
        }
      }).pipe(Effect.provide(stack())),
    30_000
  )
})
