/**
 * The operator's routes over a real socket: health, readiness (503 when draining or when storage
 * does not answer), the OpenAPI document and the reference page, outside `/v1`, with no key and
 * no rate limit, under a base path too; and the request counter of `/metrics`.
 */
import { Appexec, AppexecMetrics, Errors, ExecutionStore } from "@appexec/core"
import { FetchHttpClient, HttpClient, HttpClientRequest } from "@effect/platform"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Layer, Metric } from "effect"
import { OpenApiDocument } from "../src/index.js"
import { errorOf, get, send, stack } from "./fixtures.js"

const text = (path: string, method: "GET" | "HEAD" = "GET") =>
  Effect.gen(function*() {
    const client = yield* HttpClient.HttpClient
    const response = yield* client.execute(HttpClientRequest.make(method)(path))
    return { status: response.status, headers: response.headers, body: yield* response.text }
  })

/** `GET path` as a redirect answers it, not followed. */
const unfollowed = (path: string) =>
  text(path).pipe(Effect.provideService(FetchHttpClient.RequestInit, { redirect: "manual" }))

/** Storage that does not answer: every read fails. */
const brokenStorage = Layer.effect(
  ExecutionStore.ExecutionStore,
  Effect.map(ExecutionStore.ExecutionStore, (store) => ({
    ...store,
    countOpen: () => Effect.fail(new Errors.StorageError({ operation: "countOpen", cause: "disk gone" }))
  }))
)

describe("operator routes", () => {
  it.scoped("/healthz and /readyz answer ok with no key and no rate limit; /readyz is 503 once draining", () =>
    Effect.gen(function*() {
      for (let i = 0; i < 5; i++) {
        const health = yield* get("/healthz")
        expect(health.status).toBe(200)
        expect(health.body).toEqual({ status: "ok" })
        expect(health.headers["ratelimit-limit"]).toBeUndefined()
      }
      expect(yield* get("/readyz")).toMatchObject({ status: 200, body: { status: "ok" } })
      // The limit (2 per minute) is untouched by the operator routes.
      expect((yield* get("/v1/apps")).status).toBe(401)
      expect((yield* get("/v1/apps")).status).toBe(401)
      expect((yield* get("/v1/apps")).status).toBe(429)
      yield* Effect.flatMap(Appexec.Appexec, (appexec) => appexec.operator.drain)
      expect(yield* get("/readyz")).toMatchObject({ status: 503, body: { status: "unavailable", reason: "draining" } })
      expect((yield* get("/healthz")).status).toBe(200)
      const post = yield* send(HttpClientRequest.post("/healthz"))
      expect(post.status).toBe(405)
      expect(post.headers["allow"]).toBe("GET, HEAD")
      expect(errorOf(post.body).code).toBe("invalid_request")
      expect((yield* text("/healthz", "HEAD")).status).toBe(200)
    }).pipe(Effect.provide(stack({ rateLimit: { limit: 2 } }))))

  it.scoped("/readyz is 503 when storage fails", () =>
    Effect.gen(function*() {
      const ready = yield* get("/readyz")
      expect(ready.status).toBe(503)
      expect(ready.body).toEqual({ status: "unavailable", reason: "storage unavailable" })
    }).pipe(Effect.provide(stack({}, Layer.fresh(Appexec.layer).pipe(Layer.provide(brokenStorage))))))

  it.scoped("/openapi.json is the generated document, /docs the API reference page", () =>
    Effect.gen(function*() {
      const doc = yield* get("/openapi.json")
      expect(doc.status).toBe(200)
      expect(doc.body).toEqual(JSON.parse(JSON.stringify(OpenApiDocument.document())))
      const paths = Object.keys((doc.body as { paths: Record<string, unknown> }).paths)
      expect(paths).toEqual(expect.arrayContaining(["/v1/executions/{executionId}", "/healthz", "/readyz", "/docs"]))
      const page = yield* text("/docs")
      expect(page.status).toBe(200)
      expect(page.headers["content-type"]).toBe("text/html; charset=utf-8")
      expect(page.body).toContain("<title>appexec</title>")
      expect(page.body).toContain("api-reference")
      expect(page.body).toContain("/v1/apps/{appId}/executions")
      // The console's security headers, with a policy of the page's own: its two inline scripts
      // by their hashes (the page's script and its configuration), nothing from elsewhere.
      expect(page.headers).toMatchObject({
        "x-content-type-options": "nosniff",
        "referrer-policy": "no-referrer"
      })
      const policy = page.headers["content-security-policy"]!.split("; ")
      expect(policy).toEqual(expect.arrayContaining([
        "default-src 'none'",
        "frame-ancestors 'none'",
        "base-uri 'none'",
        "form-action 'none'",
        "connect-src 'self'"
      ]))
      // (and WebAssembly, which Scalar compiles: no string runs as script).
      const scripts = policy.find((d) => d.startsWith("script-src "))!.split(" ").slice(1)
      expect(scripts).toHaveLength(3)
      expect(scripts.slice(0, 2).every((s) => /^'sha256-[A-Za-z0-9+/]{43}='$/.test(s))).toBe(true)
      expect(scripts[2]).toBe("'wasm-unsafe-eval'")
      expect(yield* unfollowed("/")).toMatchObject({ status: 302, headers: { location: "/docs" }, body: "" })
    }).pipe(Effect.provide(stack())), 30_000)

  it.scoped("GET / redirects to the reference page, under a base path too", () =>
    Effect.gen(function*() {
      const home = yield* unfollowed("/api/")
      expect(home.status).toBe(302)
      expect(home.headers["location"]).toBe("/api/docs")
      expect((yield* unfollowed("/api")).headers["location"]).toBe("/api/docs")
      expect((yield* unfollowed("/")).status).toBe(404)
    }).pipe(Effect.provide(stack({ basePath: "/api", operator: true }))))

  it.scoped("under a base path the routes move with the app; unknown paths stay 404", () =>
    Effect.gen(function*() {
      expect((yield* get("/api/healthz")).status).toBe(200)
      expect((yield* get("/api/readyz")).status).toBe(200)
      expect((yield* get("/healthz")).status).toBe(404)
      expect((yield* get("/api/constructor")).status).toBe(404)
      expect((yield* get("/api/healthz/x")).status).toBe(404)
    }).pipe(Effect.provide(stack({ basePath: "/api", operator: true }))))

  it.scoped("under a base path the routes are opt-in: none by default, the health or the documentation ones alone", () =>
    Effect.gen(function*() {
      for (const path of ["/api/healthz", "/api/readyz", "/api/openapi.json", "/api/docs", "/api/"]) {
        expect((yield* get(path)).status).toBe(404)
      }
    }).pipe(Effect.provide(stack({ basePath: "/api" }))))

  it.scoped("{ health: true } answers the health routes alone", () =>
    Effect.gen(function*() {
      expect((yield* get("/api/healthz")).status).toBe(200)
      expect((yield* get("/api/readyz")).status).toBe(200)
      expect((yield* get("/api/openapi.json")).status).toBe(404)
      expect((yield* get("/api/docs")).status).toBe(404)
    }).pipe(Effect.provide(stack({ basePath: "/api", operator: { health: true } }))))

  it.scoped("{ docs: true } answers the documentation alone", () =>
    Effect.gen(function*() {
      expect((yield* get("/api/openapi.json")).status).toBe(200)
      expect((yield* unfollowed("/api/")).headers["location"]).toBe("/api/docs")
      expect((yield* get("/api/healthz")).status).toBe(404)
    }).pipe(Effect.provide(stack({ basePath: "/api", operator: { docs: true } }))))

  it.scoped("operator: false leaves the routes to the host", () =>
    Effect.gen(function*() {
      expect((yield* get("/healthz")).status).toBe(404)
    }).pipe(Effect.provide(stack({ operator: false }))))

  it.scoped("requests are counted by route template and status, a made-up path as 'other'", () =>
    Effect.gen(function*() {
      const count = (route: string, status: string) =>
        Metric.value(AppexecMetrics.httpRequests.pipe(Metric.tagged("route", route), Metric.tagged("status", status)))
          .pipe(Effect.map((s) => s.count))
      const before = {
        health: yield* count("/healthz", "200"),
        execution: yield* count("/v1/executions/:executionId", "401"),
        other: yield* count("other", "404")
      }
      yield* get("/healthz")
      yield* get("/v1/executions/00000000-0000-4000-8000-000000000000")
      yield* get("/no/such/path-123")
      expect(yield* count("/healthz", "200")).toBe(before.health + 1)
      expect(yield* count("/v1/executions/:executionId", "401")).toBe(before.execution + 1)
      expect(yield* count("other", "404")).toBe(before.other + 1)
    }).pipe(Effect.provide(stack())))
})
