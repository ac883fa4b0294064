/**
 * What the HTTP tests share: an appexec instance on memory behind a real server on 127.0.0.1,
 * port 0, a client pointed at it, the admin app with the operator views, a small signing-key
 * layer, the test apps, and a wait that yields rather than sleeps.
 */
import { type Jwk } from "@appexec/api"
import { Appexec, SigningKeys } from "@appexec/core"
import { NodeListener } from "@appexec/platform-node"
import { TestHarness, TestHttpServer } from "@appexec/testing"
import { FetchHttpClient, HttpClient, HttpClientRequest } from "@effect/platform"
import { Context, Effect, Layer, Logger, LogLevel } from "effect"
import type { AddressInfo } from "node:net"
import { AdminHttp } from "../src/index.js"

/** The published key of the test instance. */
export const testJwk: Jwk.Jwk = {
  kty: "OKP",
  crv: "Ed25519",
  x: "11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo",
  kid: "test-kid",
  use: "sig",
  alg: "EdDSA"
}

/** A `SigningKeys` that publishes `testJwk` and never signs (the HTTP tests send no webhooks). */
export const SigningKeysTest = Layer.succeed(SigningKeys.SigningKeys, {
  keySet: Effect.succeed({ keys: [testJwk] }),
  sign: () => Effect.die("the HTTP tests do not sign"),
  signAll: () => Effect.die("the HTTP tests do not sign"),
  rotate: Effect.die("the HTTP tests do not rotate keys")
})

/** A public app: a required text, an options parameter with a default, an optional image URL. */
export const echoApp = {
  name: "Echo",
  description: "Repeats the prompt in a style",
  public: true,
  nodes: [
    { id: "prompt", type: "input.text", label: "Prompt", config: { name: "prompt", required: true } },
    {
      id: "style",
      type: "input.options",
      label: "Style",
      config: { name: "style", options: ["plain", "loud"], default: "plain" }
    },
    { id: "photo", type: "input.url", label: "Photo", config: { name: "photo", accept: ["image"] } },
    { id: "compose", type: "text.template", label: "Compose", config: { template: "{{prompt}} ({{style}})" } },
    { id: "echo", type: "output.text", label: "Echo" }
  ],
  edges: [
    { source: "prompt", target: "compose" },
    { source: "style", target: "compose" },
    { source: "compose", target: "echo" }
  ]
}

/** A private app, imported for one workspace. */
export const privateApp = { ...echoApp, name: "Private echo", description: "Only for its workspace", public: false }

/** The base URL of the test server. */
export class TestServer extends Context.Tag("@appexec/http/test/TestServer")<TestServer, { readonly url: string }>() {}

/**
 * The server over the instance from the context: `NodeListener.serve(options)` on 127.0.0.1, port
 * 0, logging from `level` (default Info: the harness logs warnings only).
 */
export const serverLayer = (options: NodeListener.ServeOptions = {}, level: LogLevel.LogLevel = LogLevel.Info) =>
  Layer.scoped(TestServer, NodeListener.serve(options)).pipe(Layer.provide(Logger.minimumLogLevel(level)))

/** A client whose relative URLs go to the test server. */
export const clientLayer = Layer.effect(
  HttpClient.HttpClient,
  Effect.map(
    Effect.zip(TestServer, HttpClient.HttpClient),
    ([server, client]) => client.pipe(HttpClient.mapRequest(HttpClientRequest.prependUrl(server.url)))
  )
).pipe(Layer.provide(FetchHttpClient.layer))

/**
 * The whole stack for one test: a fresh instance (memory, seeded ids, worker), the signing
 * keys, the server and the client. `instance` may replace services of the instance (to inject faults);
 * the server logs from `level`.
 */
export const stack = (
  options: NodeListener.ServeOptions = {},
  instance: Layer.Layer<Appexec.Appexec, never, Layer.Layer.Success<ReturnType<typeof TestHarness.layer>>> = Layer
    .empty as never,
  level: LogLevel.LogLevel = LogLevel.Info
) => {
  const harness = TestHarness.layer()
  const overridden = Layer.provideMerge(instance, harness)
  return clientLayer.pipe(
    Layer.provideMerge(serverLayer(options, level)),
    Layer.provideMerge(SigningKeysTest),
    Layer.provideMerge(overridden)
  )
}

/** Sends `request` and returns the status, headers and parsed JSON body. */
export const send = (request: HttpClientRequest.HttpClientRequest) =>
  Effect.gen(function*() {
    const client = yield* HttpClient.HttpClient
    const response = yield* client.execute(request)
    const text = yield* response.text
    const body: unknown = text === "" ? undefined : JSON.parse(text)
    return { status: response.status, headers: response.headers, body }
  })

/** The error object of an error response body. */
export const errorOf = (body: unknown) =>
  (body as { error: { code: string; message: string; details?: Array<unknown> } }).error

/** `GET path` with the key in `x-api-key`. */
export const get = (path: string, key?: string) =>
  send(
    key === undefined
      ? HttpClientRequest.get(path)
      : HttpClientRequest.get(path).pipe(HttpClientRequest.setHeader("x-api-key", key))
  )

/** Imports the test apps and signs two workspaces in; returns ids and keys. */
export const seed = Effect.gen(function*() {
  const appexec = yield* Appexec.Appexec
  const alice = yield* TestHarness.signIn("alice")
  const bob = yield* TestHarness.signIn("bob")
  const echo = yield* appexec.apps.import(echoApp, { owner: { public: true } })
  const secret = yield* appexec.apps.import(privateApp, { owner: { workspaceId: alice.workspaceId } })
  return { alice, bob, echo, secret }
})

/** A public app that pauses 60 s before it answers. */
export const slowApp = {
  name: "Slow",
  public: true,
  nodes: [
    { id: "prompt", type: "input.text", label: "Prompt", config: { name: "prompt", required: true } },
    { id: "pause", type: "util.delay", label: "Pause", config: { ms: 60_000 } },
    { id: "out", type: "output.text", label: "Out" }
  ],
  edges: [
    { source: "prompt", target: "pause" },
    { source: "pause", target: "out" }
  ]
}

/**
 * The admin app with the operator views (and `options`), listening on 127.0.0.1, port 0 (the
 * address it is told it is bound to); its base URL.
 */
export const serveOperator = (options: AdminHttp.OperatorOptions = {}) =>
  Effect.gen(function*() {
    const { origin, server } = yield* TestHttpServer.listening
    const app = yield* AdminHttp.withOperator({
      bound: () => server.address() as AddressInfo | null ?? undefined,
      ...options
    })
    server.on("request", NodeListener.fromApp(app))
    return origin
  })

/** Until `done` holds, yielding to the event loop between looks (no sleep); dies with `what` after 100,000 looks. */
export const eventually = <E, R>(what: string, done: Effect.Effect<boolean, E, R>) =>
  Effect.gen(function*() {
    for (let turn = 0; turn < 100_000; turn++) {
      if (yield* done) return
      yield* Effect.yieldNow()
    }
    return yield* Effect.dieMessage(what)
  })
