/**
 * Embedding: the Node listener and the web handler, both mounted under a base path, and the
 * typed client built from the same API definition.
 */
import { Api } from "@appexec/api"
import { AppexecLayer, KeyStore } from "@appexec/core"
import { NodeListener } from "@appexec/platform-node"
import { MemoryKeyStore, MemoryStorage, SeededIds, TestHarness, TestOutboundHttp } from "@appexec/testing"
import { FetchHttpClient, HttpApiClient, HttpClient, HttpClientRequest } from "@effect/platform"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Layer, Runtime } from "effect"
import { createServer, type ServerResponse } from "node:http"
import { type AddressInfo, connect } from "node:net"
import { AppexecHttp, WebHandler } from "../src/index.js"
import { echoApp, seed, SigningKeysTest } from "./fixtures.js"

const instance = Layer.provideMerge(SigningKeysTest, TestHarness.layer())

/**
 * What a server sends back on a fresh connection to GET requests of `paths` sent in one write
 * (pipelined, the last asking it to close), until it closes.
 */
const rawExchange = (port: number, path: string | ReadonlyArray<string>, headers = "") =>
  Effect.async<string>((resume) => {
    let received = ""
    const paths = typeof path === "string" ? [path] : path
    const requests = paths.map((p, i) =>
      `GET ${p} HTTP/1.1\r\nHost: a\r\n${headers}${i === paths.length - 1 ? "Connection: close\r\n" : ""}\r\n`
    )
    const socket = connect(port, "127.0.0.1", () => void socket.write(requests.join("")))
    socket.setEncoding("utf8")
    socket.on("data", (chunk: string) => void (received += chunk))
    socket.on("error", () => {})
    socket.on("close", () => resume(Effect.succeed(received)))
  })

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

  it.scoped("answers made in one turn go out together; one Node refuses to write ends only its own connection", () =>
    Effect.gen(function*() {
      // An app of its own: "/bad" answers a header Node will not write; "/later" answers after
      // its fiber suspended once (the answer comes through the fiber's observer).
      const app: AppexecHttp.App = {
        runtime: Runtime.defaultRuntime,
        handle: (request) => {
          const answer = { status: 200, headers: { "content-type": "text/plain" }, body: `at ${request.url}` }
          if (request.url === "/bad") return Effect.succeed({ ...answer, headers: { "x-broken": "a\r\nb" } })
          if (request.url === "/later") return Effect.as(Effect.yieldNow(), answer)
          return Effect.succeed(answer)
        }
      }
      const server = createServer(NodeListener.fromApp(app))
      yield* Effect.acquireRelease(
        Effect.async<void>((resume) => void server.listen(0, "127.0.0.1", () => resume(Effect.void))),
        () => Effect.async<void>((resume) => void server.close(() => resume(Effect.void)))
      )
      const port = (server.address() as AddressInfo).port
      const [first, bad, later, last] = yield* Effect.all(
        [
          rawExchange(port, "/first"),
          rawExchange(port, "/bad"),
          rawExchange(port, "/later"),
          rawExchange(port, "/last")
        ],
        { concurrency: "unbounded" }
      )
      expect(bad).toBe("")
      for (const [text, path] of [[first, "/first"], [later, "/later"], [last, "/last"]] as const) {
        expect(text).toMatch(/^HTTP\/1\.1 200 OK\r\n/)
        expect(text).toContain(`content-length: ${Buffer.byteLength(`at ${path}`)}\r\n`)
        expect(text.endsWith(`\r\n\r\nat ${path}`)).toBe(true)
      }
      // The server goes on serving.
      expect(yield* rawExchange(port, "/after")).toMatch(/\r\n\r\nat \/after$/)
    }))

  it.scoped("pipelined requests: a revocation committed before they arrive refuses them all, each checked against a read made after it", () =>
    Effect.gen(function*() {
      // The instance's key store counts its revision reads.
      const store = yield* MemoryKeyStore.make
      const read = store.keyRevision ?? Effect.die("the in-memory key store keeps a revision")
      let reads = 0
      const counted = Layer.provideMerge(
        SigningKeysTest,
        AppexecLayer.make({ config: { drainTimeout: 0 } }).pipe(
          Layer.provide(
            Layer.succeed(KeyStore.KeyStore, { ...store, keyRevision: Effect.tap(read, () => void reads++) })
          ),
          Layer.provideMerge(MemoryStorage.layer),
          Layer.provideMerge(SeededIds.layer()),
          Layer.provideMerge(TestOutboundHttp.layer)
        )
      )
      yield* Effect.gen(function*() {
        const { alice } = yield* seed
        const server = createServer(NodeListener.fromApp(yield* AppexecHttp.make()))
        yield* Effect.acquireRelease(
          Effect.async<void>((resume) => void server.listen(0, "127.0.0.1", () => resume(Effect.void))),
          () => Effect.async<void>((resume) => void server.close(() => resume(Effect.void)))
        )
        const port = (server.address() as AddressInfo).port
        const statuses = (text: string) => [...text.matchAll(/HTTP\/1\.1 (\d{3}) /g)].map((m) => Number(m[1]))
        const five = ["/v1/apps", "/v1/apps", "/v1/apps", "/v1/apps", "/v1/apps"]
        const readsBefore = reads
        // Five requests in one write reach the listener in one turn (or a few): a store that
        // answers at once is read once a turn (no suspension), never by fewer than one read after
        // they arrived.
        const first = yield* rawExchange(port, five, `x-api-key: ${alice.key}\r\n`)
        expect(statuses(first)).toEqual([200, 200, 200, 200, 200])
        const firstReads = reads - readsBefore
        expect(firstReads).toBeGreaterThanOrEqual(1)
        expect(firstReads).toBeLessThanOrEqual(5)
        // Revoked straight in the store, as another process does: every request sent after it is refused.
        expect(yield* store.revokeKey(alice.apiKeyId, 1)).toBe(1)
        const second = yield* rawExchange(port, five, `x-api-key: ${alice.key}\r\n`)
        expect(statuses(second)).toEqual([401, 401, 401, 401, 401])
        expect(reads - readsBefore).toBeGreaterThan(firstReads)
        // A request alone is refused too.
        expect(statuses(yield* rawExchange(port, "/v1/apps", `x-api-key: ${alice.key}\r\n`))).toEqual([401])
      }).pipe(Effect.provide(counted))
    }))

  it.scoped("a turn of many requests is answered 64 at a time, in order", () =>
    Effect.gen(function*() {
      const responses: Array<ServerResponse> = []
      // At each request the app starts, how many answers were already written.
      const writtenAtStart: Array<number> = []
      const listener = NodeListener.fromApp({
        runtime: Runtime.defaultRuntime,
        handle: (request) => {
          writtenAtStart.push(responses.filter((r) => r.writableEnded).length)
          return Effect.succeed({ status: 200, headers: { "content-type": "text/plain" }, body: `at ${request.url}` })
        }
      })
      const server = createServer((request, response) => {
        responses.push(response)
        listener(request, response)
      })
      yield* Effect.acquireRelease(
        Effect.async<void>((resume) => void server.listen(0, "127.0.0.1", () => resume(Effect.void))),
        () => Effect.async<void>((resume) => void server.close(() => resume(Effect.void)))
      )
      const paths = Array.from({ length: 70 }, (_, i) => `/n/${i}`)
      // Pipelined in one write: Node reads them all in one turn.
      const text = yield* rawExchange((server.address() as AddressInfo).port, paths)
      expect([...text.matchAll(/\r\n\r\nat (\/n\/\d+)/g)].map((m) => m[1])).toEqual(paths)
      expect(writtenAtStart.slice(0, 64)).toEqual(Array.from({ length: 64 }, () => 0))
      expect(writtenAtStart.slice(64)).toEqual(Array.from({ length: 6 }, () => 64))
    }))
})
