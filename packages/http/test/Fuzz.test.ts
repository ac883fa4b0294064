/**
 * Property tests over a real socket: thousands of generated requests — well-formed ones from the
 * API's own schemas (`effect/Arbitrary`), and hostile ones (random methods, paths, headers, bodies
 * and raw bytes) — never get a 5xx, and every answer that is not a 2xx carries the error body.
 */
import { Api, ErrorBody } from "@appexec/api"
import { describe, expect, it } from "@effect/vitest"
import { Arbitrary, Effect, FastCheck as fc, Schema } from "effect"
import { request as httpRequest } from "node:http"
import { connect } from "node:net"
import { seed, stack, TestServer } from "./fixtures.js"

interface Sent {
  readonly method: string
  readonly path: string
  readonly headers: Record<string, string>
  readonly body?: Uint8Array | string | undefined
}

interface Answer {
  readonly status: number
  readonly contentType: string
  readonly text: string
}

/** Sends `sent` on a connection of its own; none when Node refuses to send it (an invalid header, say). */
const send = (port: number, sent: Sent) =>
  new Promise<Answer | undefined>((resolve, reject) => {
    let req: ReturnType<typeof httpRequest>
    try {
      req = httpRequest({
        host: "127.0.0.1",
        port,
        method: sent.method,
        path: sent.path,
        headers: sent.headers,
        agent: false
      }, (res) => {
        const chunks: Array<Buffer> = []
        res.on("data", (c: Buffer) => chunks.push(c))
        res.on("end", () =>
          resolve({
            status: res.statusCode ?? 0,
            contentType: String(res.headers["content-type"] ?? ""),
            text: Buffer.concat(chunks).toString()
          }))
        res.on("error", reject)
      })
    } catch {
      return resolve(undefined)
    }
    req.on("error", reject)
    req.end(sent.body)
  })

const isErrorBody = Schema.is(ErrorBody.ErrorBody)
const decodeStarted = Schema.decodeUnknownEither(Api.StartedExecutionResponse)

/** The properties every answer has: no 5xx; the error body, as JSON, on every answer that is not a 2xx. */
const checkAnswer = (sent: Pick<Sent, "method">, answer: Answer) => {
  expect(answer.status).toBeLessThan(500)
  // Successes, and the redirect of `GET /` to the reference page, carry no error body.
  if (answer.status >= 200 && answer.status < 400) return
  if (sent.method === "HEAD") return
  expect(answer.contentType).toContain("application/json")
  const parsed: unknown = JSON.parse(answer.text)
  expect(isErrorBody(parsed) ? true : parsed).toBe(true)
}

/** Printable header values, as a client could send them. */
const headerValue = fc.string({
  unit: fc.integer({ min: 0x20, max: 0x7e }).map((c) => String.fromCharCode(c)),
  maxLength: 200
})
const token = fc.stringMatching(/^[A-Za-z0-9!#$%&'*+.^_`|~-]{1,20}$/)

/** The body of the first HTTP/1.1 answer in `raw` (chunked or not). */
const firstBody = (raw: string): string => {
  const split = raw.indexOf("\r\n\r\n")
  const head = raw.slice(0, split).toLowerCase()
  let rest = raw.slice(split + 4)
  const length = /content-length: *(\d+)/.exec(head)
  if (length !== null) return rest.slice(0, Number(length[1]))
  if (!head.includes("transfer-encoding: chunked")) return rest
  let body = ""
  for (;;) {
    const line = rest.indexOf("\r\n")
    const size = parseInt(rest.slice(0, line), 16)
    if (!(size > 0)) return body
    body += rest.slice(line + 2, line + 2 + size)
    rest = rest.slice(line + 2 + size + 2)
  }
}

const settings = { rateLimit: { limit: 1_000_000 } } as const

describe("fuzzing the API over a real socket", () => {
  it.live(
    "well-formed requests from the API's schemas: 202 or a 4xx with the error body",
    () =>
      Effect.gen(function*() {
        const { alice, echo, secret, bob } = yield* seed
        const port = Number(new URL((yield* TestServer).url).port)
        const payload = Arbitrary.make(Api.StartExecutionPayload)
        const query = Arbitrary.make(Schema.encodedSchema(Api.StartExecutionQuery))
        const listQuery = Arbitrary.make(Schema.encodedSchema(Api.ListAppsQuery))
        // Inputs near the echo app's own parameters, so that many starts are valid.
        const echoInputs = fc.record(
          { prompt: fc.string(), style: fc.constantFrom("plain", "loud", "quiet", ""), photo: fc.webUrl() },
          { requiredKeys: [] }
        )
        const start = fc.record({
          appId: fc.constantFrom(echo.appId, secret.appId, crypto.randomUUID(), "not-a-uuid"),
          key: fc.constantFrom(alice.key, bob.key),
          body: fc.oneof(
            payload,
            echoInputs.map((inputs) => ({ inputs })),
            // Any JSON as the priority: a number in range is taken, anything else is a 400.
            fc.record({ inputs: echoInputs, priority: fc.oneof(fc.integer({ min: -12, max: 12 }), fc.jsonValue()) })
          ),
          query
        })
        let accepted = 0
        yield* Effect.promise(() =>
          fc.assert(
            fc.asyncProperty(start, async ({ appId, body, key, query }) => {
              const search = new URLSearchParams(query.webhook === undefined ? {} : { webhook: query.webhook })
              const sent = {
                method: "POST",
                path: `/v1/apps/${appId}/executions?${search}`,
                headers: { "x-api-key": key, "content-type": "application/json" },
                body: JSON.stringify(body)
              }
              const answer = (await send(port, sent))!
              checkAnswer(sent, answer)
              if (answer.status === 202) {
                accepted++
                expect(decodeStarted(JSON.parse(answer.text))._tag).toBe("Right")
              } else expect([400, 403, 404]).toContain(answer.status)
            }),
            { numRuns: 600 }
          )
        )
        expect(accepted).toBeGreaterThan(0)
        yield* Effect.promise(() =>
          fc.assert(
            fc.asyncProperty(listQuery, fc.uuid(), async (q, executionId) => {
              const params = new URLSearchParams(
                Object.entries(q).filter((e): e is [string, string] => e[1] !== undefined)
              )
              for (
                const path of [
                  `/v1/apps?${params}`,
                  `/v1/executions/${executionId}`,
                  `/v1/executions/${executionId}/webhook`
                ]
              ) {
                const sent = { method: "GET", path, headers: { "x-api-key": alice.key } }
                checkAnswer(sent, (await send(port, sent))!)
              }
            }),
            { numRuns: 300 }
          )
        )
      }).pipe(Effect.provide(stack(settings))),
    120_000
  )

  it.live("hostile requests: random methods, paths, headers and bodies never get a 5xx", () =>
    Effect.gen(function*() {
      const { alice, echo } = yield* seed
      const port = Number(new URL((yield* TestServer).url).port)
      const segment = fc.oneof(
        fc.constantFrom(
          "v1",
          "apps",
          "executions",
          "webhooks",
          "signing-key",
          "workflow",
          "webhook",
          "media",
          echo.appId
        ),
        fc.string({ maxLength: 30 }).map(encodeURIComponent),
        fc.constantFrom("%", "%zz", "..", "%00", "%2F", "é", ";", "?", "#")
      )
      const path = fc.array(segment, { maxLength: 6 }).chain((parts) =>
        fc.oneof(fc.constant(""), fc.string({ maxLength: 40 }).map((q) => `?${q}`)).map((q) =>
          `/${parts.join("/")}${q}`
        )
      )
      const hostile = fc.record({
        method: fc.oneof(fc.constantFrom("GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS"), token),
        path,
        headers: fc.dictionary(token, headerValue, { maxKeys: 6 }),
        auth: fc.constantFrom<Record<string, string>>(
          {},
          { "x-api-key": alice.key },
          { authorization: `Bearer ${alice.key}` },
          { "x-api-key": "aex_" },
          { authorization: "Basic abc" }
        ),
        body: fc.oneof(
          fc.constant(undefined),
          fc.uint8Array({ maxLength: 2_000 }),
          fc.json(),
          fc.string({ maxLength: 500 }),
          fc.jsonValue().map((inputs) => JSON.stringify({ inputs }))
        ),
        contentType: fc.constantFrom(
          "application/json",
          "text/plain",
          "application/octet-stream",
          "",
          "application/json; charset=latin1"
        )
      })
      let answered = 0
      yield* Effect.promise(() =>
        fc.assert(
          fc.asyncProperty(hostile, async ({ auth, body, contentType, headers, method, path }) => {
            const sent = {
              method,
              path,
              headers: { ...headers, ...auth, ...(contentType === "" ? {} : { "content-type": contentType }) },
              body: method === "GET" || method === "HEAD" ? undefined : body
            }
            const answer = await send(port, sent).catch(() => undefined)
            if (answer === undefined) return
            answered++
            checkAnswer(sent, answer)
          }),
          { numRuns: 1_500 }
        )
      )
      expect(answered).toBeGreaterThan(1_000)
    }).pipe(Effect.provide(stack(settings))), 120_000)

  it.live(
    "random bytes on a raw socket: never a 5xx, the error body when an answer comes",
    () =>
      Effect.gen(function*() {
        const port = Number(new URL((yield* TestServer).url).port)
        const raw = fc.oneof(
          fc.uint8Array({ minLength: 1, maxLength: 600 }),
          fc.tuple(
            fc.constantFrom("GET", "POST", "G\u0000T"),
            fc.string({ maxLength: 60 }),
            fc.uint8Array({ maxLength: 200 })
          )
            .map(([m, p, rest]) =>
              Buffer.concat([Buffer.from(`${m} /${p} HTTP/1.1\r\n`), rest, Buffer.from("\r\n\r\n")])
            )
        )
        yield* Effect.promise(() =>
          fc.assert(
            fc.asyncProperty(raw, async (bytes) => {
              const text = await new Promise<string>((resolve) => {
                const socket = connect({ port, host: "127.0.0.1" })
                let received = ""
                socket.on("data", (c: Buffer) => (received += c.toString("latin1")))
                socket.on("error", () => resolve(received))
                socket.on("close", () => resolve(received))
                socket.write(bytes)
                // Wait for the answer, not for the headers timeout: end our side.
                socket.end()
              })
              const status = /^HTTP\/1\.1 (\d{3})/.exec(text)
              if (status === null) return
              expect(Number(status[1])).toBeLessThan(500)
              if (Number(status[1]) >= 300) expect(isErrorBody(JSON.parse(firstBody(text)))).toBe(true)
            }),
            { numRuns: 300 }
          )
        )
      }).pipe(Effect.provide(stack(settings))),
    60_000
  )
})
