/**
 * What wraps the endpoints: authentication (401 with `WWW-Authenticate`), the rate limit and its
 * headers (exhaustion and reset in virtual time), 404/405 outside the API, and 500 for a defect.
 */
import { Appexec } from "@appexec/core"
import { HttpClientRequest } from "@effect/platform"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Layer, Logger, TestClock } from "effect"
import { errorOf, get, seed, send, stack } from "./fixtures.js"

describe("authentication", () => {
  it.scoped("answers 401 with WWW-Authenticate for a missing, malformed, unknown or revoked key, on every endpoint", () =>
    Effect.gen(function*() {
      const { alice, echo } = yield* seed
      const appexec = yield* Appexec.Appexec
      const revoked = yield* appexec.keys.create({ workspace: "alice", user: "leaver" })
      yield* appexec.keys.revoke(revoked.record.apiKeyId)
      const unknown = `aex_${"A".repeat(43)}`
      const paths = [
        "/v1/apps",
        `/v1/apps/${echo.appId}`,
        `/v1/apps/${echo.appId}/workflow`,
        "/v1/executions/00000000-0000-4000-8000-000000000000",
        "/v1/webhooks/signing-key"
      ]
      const credentials: Array<[Record<string, string>, string]> = [
        [{}, "required"],
        [{ "x-api-key": "not-a-key" }, "malformed"],
        [{ authorization: `Basic ${alice.key}` }, "malformed"],
        [{ authorization: `Bearer ${unknown}` }, "not valid"],
        // The same answer as an unknown key: nothing tells a revoked key apart.
        [{ "x-api-key": revoked.key }, "The API key is not valid."]
      ]
      for (const path of paths) {
        for (const [headers, message] of credentials) {
          const res = yield* send(HttpClientRequest.get(path).pipe(HttpClientRequest.setHeaders(headers)))
          expect(res.status, `${path} ${JSON.stringify(headers)}`).toBe(401)
          expect(res.headers["www-authenticate"]).toMatch(/^Bearer/)
          expect(errorOf(res.body).code).toBe("unauthorized")
          expect(errorOf(res.body).message).toContain(message)
        }
        const [unknownAnswer, revokedAnswer] = yield* Effect.all([
          send(HttpClientRequest.get(path).pipe(HttpClientRequest.setHeader("x-api-key", unknown))),
          send(HttpClientRequest.get(path).pipe(HttpClientRequest.setHeader("x-api-key", revoked.key)))
        ])
        expect(revokedAnswer.body).toEqual(unknownAnswer.body)
      }
      const start = yield* send(
        HttpClientRequest.post(`/v1/apps/${echo.appId}/executions`).pipe(
          HttpClientRequest.bodyUnsafeJson({ inputs: { prompt: "x" } })
        )
      )
      expect(start.status).toBe(401)
    }).pipe(Effect.provide(stack())))
})

describe("rate limit", () => {
  it.scoped(
    "counts every /v1 request per IP before auth, sets the headers, answers 429 with Retry-After, and resets with the window",
    () =>
      Effect.gen(function*() {
        const { alice } = yield* seed
        const first = yield* get("/v1/apps", alice.key)
        expect(first.status).toBe(200)
        expect(first.headers["ratelimit-limit"]).toBe("3")
        expect(first.headers["ratelimit-remaining"]).toBe("2")
        expect(first.headers["ratelimit-reset"]).toBe("60")
        const unauthenticated = yield* get("/v1/apps")
        expect(unauthenticated.status).toBe(401)
        expect(unauthenticated.headers["ratelimit-remaining"]).toBe("1")
        const unknownPath = yield* get("/v1/nope", alice.key)
        expect(unknownPath.status).toBe(404)
        expect(unknownPath.headers["ratelimit-remaining"]).toBe("0")

        yield* TestClock.adjust("20 seconds")
        const refused = yield* get("/v1/apps", alice.key)
        expect(refused.status).toBe(429)
        expect(errorOf(refused.body).code).toBe("rate_limited")
        // 4 requests counted in this window: one more fits as the next window begins, at 60 s
        // (the previous window's share counts at most `limit − 1`): never later than the window.
        expect(refused.headers["retry-after"]).toBe("40")
        expect(refused.headers["ratelimit-remaining"]).toBe("0")
        expect(refused.headers["ratelimit-reset"]).toBe("40")

        // When Retry-After says, one request fits again.
        yield* TestClock.adjust("40 seconds")
        const again = yield* get("/v1/apps", alice.key)
        expect(again.status).toBe(200)
        expect(again.headers["ratelimit-remaining"]).toBe("0")
      }).pipe(Effect.provide(stack({ rateLimit: { limit: 3 } }))),
    20_000
  )

  it.scoped("does not let twice the limit through across a window boundary", () =>
    Effect.gen(function*() {
      const { alice } = yield* seed
      yield* TestClock.adjust("59 seconds")
      const statuses: Array<number> = []
      for (let i = 0; i < 6; i++) {
        if (i === 3) yield* TestClock.adjust("2 seconds")
        statuses.push((yield* get("/v1/apps", alice.key)).status)
      }
      // The previous window's share counts at most `limit − 1`: one more than the limit, never twice it.
      expect(statuses).toEqual([200, 200, 200, 200, 429, 429])
    }).pipe(Effect.provide(stack({ rateLimit: { limit: 3 } }))), 20_000)

  it.scoped("uses the socket address, ignoring X-Forwarded-For, unless trustProxy is set", () =>
    Effect.gen(function*() {
      const { alice } = yield* seed
      const from = (ip: string) =>
        send(
          HttpClientRequest.get("/v1/apps").pipe(
            HttpClientRequest.setHeaders({ "x-api-key": alice.key, "x-forwarded-for": ip })
          )
        )
      expect((yield* from("10.0.0.1")).status).toBe(200)
      expect((yield* from("10.0.0.2")).status).toBe(429)
    }).pipe(Effect.provide(stack({ rateLimit: { limit: 1 } }))))

  it.scoped("with trustProxy, counts the address the proxy appended, whatever the client put before it", () =>
    Effect.gen(function*() {
      const { alice } = yield* seed
      const from = (spoofed: string, ip: string) =>
        send(
          HttpClientRequest.get("/v1/apps").pipe(
            HttpClientRequest.setHeaders({ "x-api-key": alice.key, "x-forwarded-for": `${spoofed}, ${ip}` })
          )
        )
      expect((yield* from("1.1.1.1", "10.0.0.1")).status).toBe(200)
      expect((yield* from("2.2.2.2", "10.0.0.2")).status).toBe(200)
      // A new made-up entry on the left does not buy a fresh counter.
      expect((yield* from("3.3.3.3", "10.0.0.1")).status).toBe(429)
    }).pipe(Effect.provide(stack({ rateLimit: { limit: 1, trustProxy: true } }))))

  it.scoped("with trustProxy N, counts the address N hops back, whatever the client put before it", () =>
    Effect.gen(function*() {
      const { alice } = yield* seed
      const via = (forwardedFor: string) =>
        send(
          HttpClientRequest.get("/v1/apps").pipe(
            HttpClientRequest.setHeaders({ "x-api-key": alice.key, "x-forwarded-for": forwardedFor })
          )
        )
      // Client, then the first proxy's address as the second proxy appended it.
      expect((yield* via("203.0.113.7, 10.0.0.1")).status).toBe(200)
      expect((yield* via("1.1.1.1, 203.0.113.8, 10.0.0.1")).status).toBe(200)
      // Made-up entries on the left, another first proxy: still the same client.
      expect((yield* via("9.9.9.9, 203.0.113.7, 10.0.0.2")).status).toBe(429)
      expect((yield* via("8.8.8.8, 203.0.113.8, 10.0.0.1")).status).toBe(429)
      // Fewer entries than hops: the leftmost, which a trusted proxy wrote, counts.
      expect((yield* via("203.0.113.9")).status).toBe(200)
      expect((yield* via("203.0.113.9")).status).toBe(429)
    }).pipe(Effect.provide(stack({ rateLimit: { limit: 1, trustProxy: 2 } }))))
})

describe("outside the API", () => {
  it.scoped("answers 404, not a self-contradicting 405, for a path it cannot decode", () =>
    Effect.gen(function*() {
      const { alice } = yield* seed
      for (const path of ["/v1/apps/%ZZ", "/v1/executions/%E2%82"]) {
        const res = yield* send(HttpClientRequest.get(path).pipe(HttpClientRequest.setHeader("x-api-key", alice.key)))
        expect(res.status).toBe(404)
        expect((res.body as { error: { code: string } }).error.code).toBe("not_found")
      }
    }).pipe(Effect.provide(stack())))

  it.scoped("answers 404 for unknown paths and 405 for known paths with another method, in the error body", () =>
    Effect.gen(function*() {
      const { alice, echo } = yield* seed
      for (const path of ["/v1", "/v1/", "/v1/users", "/v1/apps/x/y/z", "/v2/apps", "/index.html"]) {
        const res = yield* get(path, alice.key)
        expect(res.status, path).toBe(404)
        expect(errorOf(res.body).code).toBe("not_found")
      }
      const cases: Array<[string, string, string]> = [
        ["DELETE", `/v1/apps/${echo.appId}`, "GET"],
        ["POST", "/v1/apps", "GET"],
        ["PUT", `/v1/apps/${echo.appId}/executions`, "POST"],
        ["PATCH", "/v1/webhooks/signing-key", "GET"],
        ["GET", `/v1/apps/${echo.appId}/executions`, "POST"]
      ]
      for (const [method, path, allow] of cases) {
        const res = yield* send(
          HttpClientRequest.make(method as "GET")(path).pipe(HttpClientRequest.setHeader("x-api-key", alice.key))
        )
        expect(res.status, `${method} ${path}`).toBe(405)
        expect(res.headers["allow"]).toBe(allow)
        expect(errorOf(res.body).code).toBe("invalid_request")
      }
    }).pipe(Effect.provide(stack())))
})

/** Replaces the read of `GET /v1/executions/{id}` with one that dies, to see what a defect looks like from outside. */
const defectiveGet = Layer.effect(
  Appexec.Appexec,
  Effect.map(Appexec.Appexec, (appexec) => ({
    ...appexec,
    executions: { ...appexec.executions, getJson: () => Effect.die(new Error("secret internal detail")) }
  }))
)

describe("defects", () => {
  it.scoped("answer 500 internal_error with the request id, logged with it, without internals", () => {
    const logs: Array<{ message: string; annotations: Record<string, unknown> }> = []
    const capture = Logger.make(({ message, annotations, cause }) => {
      logs.push({
        message: `${String(Array.isArray(message) ? message.join(" ") : message)} ${
          cause._tag === "Empty" ? "" : String(cause)
        }`,
        annotations: Object.fromEntries(annotations)
      })
    })
    return Effect.gen(function*() {
      const { alice } = yield* seed
      const res = yield* get("/v1/executions/00000000-0000-4000-8000-000000000000", alice.key)
      expect(res.status).toBe(500)
      const requestId = res.headers["x-request-id"]!
      expect(requestId).toMatch(/^[0-9a-f-]{36}$/)
      expect(errorOf(res.body)).toEqual({
        code: "internal_error",
        message: expect.stringContaining(requestId),
        details: [{ requestId }]
      })
      expect(JSON.stringify(res.body)).not.toContain("secret")
      const logged = logs.filter((l) => l.annotations.requestId === requestId)
      expect(logged.some((l) => l.message.includes("secret internal detail"))).toBe(true)
      expect(logged.some((l) => l.message.includes("GET /v1/executions/00000000-0000-4000-8000-000000000000 500")))
        .toBe(true)
    }).pipe(Effect.provide(stack({}, defectiveGet)), Effect.provide(Logger.replace(Logger.defaultLogger, capture)))
  })
})
