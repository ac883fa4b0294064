/**
 * The listener mounted the ways host frameworks mount it, on a real server: under a prefix that
 * the framework strips (Express: `url` without it, `originalUrl` with it) or does not (plain
 * node:http, Fastify), and behind a body parser that read the request body first (a parsed
 * body is used, a body left nowhere is refused with a message that says so, never waited for).
 */
import { Appexec } from "@appexec/core"
import { TestHarness } from "@appexec/testing"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Logger, LogLevel } from "effect"
import { createServer, type IncomingMessage, type ServerResponse } from "node:http"
import type { AddressInfo } from "node:net"
import { NodeListener } from "../src/index.js"
import { CONSUMED } from "../src/internal/IncomingRequest.js"

const greeting = {
  name: "Greeting",
  public: true,
  nodes: [
    { id: "who", type: "input.text", label: "Who", config: { name: "who", required: true } },
    { id: "compose", type: "text.template", label: "Compose", config: { template: "Hello {{who}}" } },
    { id: "greeting", type: "output.text", label: "Greeting" }
  ],
  edges: [{ source: "who", target: "compose" }, { source: "compose", target: "greeting" }]
}

/** What a host does with a request before the listener gets it. */
type Host = (request: IncomingMessage, response: ServerResponse, listener: NodeListener.Listener) => void

/** Lines logged while the test runs: level and message. */
const logged: Array<string> = []
const capture = Logger.replace(
  Logger.defaultLogger,
  Logger.make(({ logLevel, message }) => void logged.push(`${logLevel.label} ${String(message)}`))
)

/** A server on 127.0.0.1 whose requests go through `host` to the listener under `basePath`. */
const hostServer = (basePath: string, host: Host) =>
  Effect.gen(function*() {
    // The harness logs warnings only; what the listener says is information.
    const listener = yield* NodeListener.make({ basePath, logRequests: false }).pipe(
      Logger.withMinimumLogLevel(LogLevel.Info)
    )
    const server = createServer((request, response) => host(request, response, listener))
    yield* Effect.acquireRelease(
      Effect.async<void>((resume) => void server.listen(0, "127.0.0.1", () => resume(Effect.void))),
      () => Effect.async<void>((resume) => void server.close(() => resume(Effect.void)))
    )
    const appexec = yield* Appexec.Appexec
    const app = yield* appexec.apps.import(greeting)
    const { key } = yield* appexec.keys.create({ workspace: "host" })
    return { base: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, appId: app.appId, key }
  })

/** Like Express's `app.use(prefix, listener)`: the prefix moved from `url` to `originalUrl`. */
const stripping = (prefix: string): Host => (request, response, listener) => {
  const url = request.url ?? "/"
  if (!url.startsWith(prefix)) return void response.writeHead(404).end("host 404")
  Object.assign(request, { originalUrl: url, url: url.slice(prefix.length) || "/" })
  listener(request, response)
}

/** Like a body parser ahead of the listener: reads the whole body, then leaves `body(text)` on the request. */
const parsing = (body: (text: string) => unknown): Host => (request, response, listener) => {
  let text = ""
  request.setEncoding("utf8")
  request.on("data", (chunk: string) => void (text += chunk))
  request.on("end", () => {
    const parsed = body(text)
    if (parsed !== undefined) Object.assign(request, { body: parsed })
    listener(request, response)
  })
}

const post = (url: string, key: string, body: string, contentType = "application/json") =>
  Effect.promise(() =>
    fetch(url, { method: "POST", headers: { "x-api-key": key, "content-type": contentType }, body }).then(async (
      r
    ) => ({
      status: r.status,
      body: (await r.json()) as { readonly data?: { readonly status: string }; readonly error?: { message: string } }
    }))
  )

const get = (url: string, key: string) =>
  Effect.promise(() =>
    fetch(url, { headers: { "x-api-key": key } }).then(async (r) => ({
      status: r.status,
      body: (await r.json()) as { readonly error?: { readonly message: string } }
    }))
  )

/** A fresh instance in memory, its lines captured. */
const instance = <A, E, R>(test: Effect.Effect<A, E, R>) =>
  test.pipe(Effect.provide(TestHarness.layer()), Effect.provide(capture))

describe("the listener mounted by a host", () => {
  it.scoped("under a prefix the host strips (Express): served as if it was not stripped", () =>
    Effect.gen(function*() {
      const { appId, base, key } = yield* hostServer("/appexec", stripping("/appexec"))
      expect((yield* get(`${base}/appexec/v1/apps`, key)).status).toBe(200)
      const started = yield* post(`${base}/appexec/v1/apps/${appId}/executions`, key, "{\"inputs\":{\"who\":\"Ada\"}}")
      expect(started.status).toBe(202)
    }).pipe(instance))

  it.scoped("under a prefix the host keeps (node:http, Fastify); a path that misses it is a 404 naming it", () =>
    Effect.gen(function*() {
      const { base, key } = yield* hostServer("/appexec", (request, response, listener) => listener(request, response))
      expect((yield* get(`${base}/appexec/v1/apps`, key)).status).toBe(200)
      const missed = yield* get(`${base}/v1/apps`, key)
      expect(missed.status).toBe(404)
      expect(missed.body.error?.message).toBe(
        "No endpoint GET /v1/apps: appexec is mounted under /appexec, its endpoints are at /appexec/v1/…."
      )
    }).pipe(instance))

  it.scoped("mounted under a prefix it was not told about: the 404 says to give the prefix as basePath", () =>
    Effect.gen(function*() {
      const { base, key } = yield* hostServer("", stripping("/appexec"))
      const missed = yield* get(`${base}/appexec/v1/apps`, key)
      expect(missed.status).toBe(404)
      expect(missed.body.error?.message).toContain("appexec has no base path")
      expect(missed.body.error?.message).toContain("gives that prefix as its basePath")
    }).pipe(instance))

  it.scoped("behind a JSON body parser: the parsed body is used, said once at info", () =>
    Effect.gen(function*() {
      logged.length = 0
      const { appId, base, key } = yield* hostServer("", parsing((text) => JSON.parse(text)))
      for (const who of ["Ada", "Grace"]) {
        const started = yield* post(`${base}/v1/apps/${appId}/executions`, key, JSON.stringify({ inputs: { who } }))
        expect(started.status).toBe(202)
      }
      expect(logged.filter((line) => line.includes("a host body parser read the request body"))).toHaveLength(1)
      // What the parsed body holds is checked as a sent one is.
      const wrong = yield* post(`${base}/v1/apps/${appId}/executions`, key, JSON.stringify({ inputs: { who: 3 } }))
      expect(wrong.status).toBe(400)
    }).pipe(instance))

  it.scoped("behind a text or raw parser: the string or the bytes are used as they are", () =>
    Effect.gen(function*() {
      const asText = yield* hostServer("", parsing((text) => text))
      const fromText = yield* post(
        `${asText.base}/v1/apps/${asText.appId}/executions`,
        asText.key,
        "{\"inputs\":{\"who\":\"Ada\"}}"
      )
      expect(fromText.status).toBe(202)
    }).pipe(instance))

  it.scoped("behind a parser that read the body and left it nowhere (Fastify's raw request): 400 at once, logged", () =>
    Effect.gen(function*() {
      logged.length = 0
      const { appId, base, key } = yield* hostServer("", parsing(() => undefined))
      const refused = yield* post(`${base}/v1/apps/${appId}/executions`, key, "{\"inputs\":{\"who\":\"Ada\"}}")
      expect(refused.status).toBe(400)
      expect(refused.body.error?.message).toBe(CONSUMED)
      expect(logged.some((line) => line.startsWith("WARN") && line.includes(CONSUMED))).toBe(true)
    }).pipe(instance))

  it.scoped("a parsed body over the bound is 413, as a sent one", () =>
    Effect.gen(function*() {
      const { appId, base, key } = yield* hostServer("", parsing((text) => JSON.parse(text)))
      const large = yield* post(
        `${base}/v1/apps/${appId}/executions`,
        key,
        JSON.stringify({ inputs: { who: "x".repeat(1_100_000) } })
      )
      expect(large.status).toBe(413)
    }).pipe(instance))
})
