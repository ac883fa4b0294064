/**
 * Embedding: the Node listener and the web handler, both mounted under a base path, and the
 * typed client built from the same API definition.
 */
import { Api } from "@appexec/api"
import { TestHarness } from "@appexec/testing"
import { FetchHttpClient, HttpApiClient, HttpClient, HttpClientRequest } from "@effect/platform"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { createServer } from "node:http"
import type { AddressInfo } from "node:net"
import { NodeListener, WebHandler } from "../src/index.js"
import { echoApp, seed, SigningKeysTest } from "./fixtures.js"

const instance = Layer.provideMerge(SigningKeysTest, TestHarness.layer())

describe("embedding", () => {
  it.scoped("the Node listener serves under /api beside the host's own routes, and the typed client reaches it", () =>
    Effect.gen(function*() {
      const { alice, echo } = yield* seed
      const listener = yield* NodeListener.make({ basePath: "/api" })
      const server = createServer((req, res) => {
        if (req.url === "/health") return void res.end("host ok")
        if (req.url?.startsWith("/api/") === true) return listener(req, res)
        res.statusCode = 404
        res.end("host 404")
      })
      yield* Effect.acquireRelease(
        Effect.async<void>((resume) => void server.listen(0, "127.0.0.1", () => resume(Effect.void))),
        () => Effect.async<void>((resume) => void server.close(() => resume(Effect.void)))
      )
      const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
      const health = yield* Effect.promise(() => fetch(`${base}/health`).then((r) => r.text()))
      expect(health).toBe("host ok")

      const client = yield* HttpApiClient.make(Api.AppexecApi, {
        baseUrl: `${base}/api`,
        transformClient: HttpClient.mapRequest(HttpClientRequest.setHeader("x-api-key", alice.key))
      })
      const apps = yield* client.apps.listApps({ urlParams: {} })
      expect(apps.data.map((a) => a.name)).toContain(echoApp.name)
      const started = yield* client.apps.startExecution({
        path: { appId: echo.appId },
        urlParams: {},
        headers: {},
        payload: { inputs: { prompt: "hi" } }
      })
      expect(started.data.status).toBe("queued")
      const polled = yield* client.executions.getExecution({
        path: { executionId: started.data.executionId },
        headers: {}
      })
      expect(polled.data.executionId).toBe(started.data.executionId)
      // Answers carry their length (no chunked framing); a 304 has neither body nor length.
      const raw = yield* Effect.promise(() =>
        fetch(`${base}/api/v1/executions/${started.data.executionId}`, { headers: { "x-api-key": alice.key } })
      )
      const text = yield* Effect.promise(() => raw.text())
      expect(raw.headers.get("content-length")).toBe(String(Buffer.byteLength(text)))
      expect(raw.headers.get("transfer-encoding")).toBeNull()
      const unchanged = yield* Effect.promise(() =>
        fetch(`${base}/api/v1/executions/${started.data.executionId}`, {
          headers: { "x-api-key": alice.key, "if-none-match": raw.headers.get("etag")! }
        })
      )
      expect(unchanged.status).toBe(304)
      expect(unchanged.headers.get("content-length")).toBeNull()
      const notFound = yield* client.apps.getApp({ path: { appId: "00000000-0000-4000-8000-000000000000" } }).pipe(
        Effect.flip
      )
      expect(notFound).toMatchObject({ error: { code: "not_found" } })
    }).pipe(Effect.provide(Layer.merge(instance, FetchHttpClient.layer))))

  it.scoped("the web handler serves Request → Response under a base path, with the caller's address for the rate limit", () =>
    Effect.gen(function*() {
      const { alice } = yield* seed
      const handler = yield* WebHandler.make({ basePath: "/api/", rateLimit: { limit: 1 } })
      const call = (path: string, clientAddress: string) =>
        Effect.promise(() =>
          handler(new Request(`http://host.example${path}`, { headers: { "x-api-key": alice.key } }), { clientAddress })
        )
      const ok = yield* call("/api/v1/apps", "10.0.0.1")
      expect(ok.status).toBe(200)
      expect(ok.headers.get("ratelimit-limit")).toBe("1")
      expect(((yield* Effect.promise(() => ok.json())) as { data: Array<unknown> }).data.length).toBe(2)
      expect((yield* call("/api/v1/apps", "10.0.0.1")).status).toBe(429)
      expect((yield* call("/api/v1/apps", "10.0.0.2")).status).toBe(200)
      const outside = yield* call("/v1/apps", "10.0.0.3")
      expect(outside.status).toBe(404)
    }).pipe(Effect.provide(instance)))
})
