/**
 * Webhook benchmarks: Ed25519 signatures per second with `@noble/ed25519` (sync, with SHA-512
 * from node:crypto, and async, with WebCrypto SHA-512), and signed webhook deliveries per second
 * from the dispatcher to a local receiver over real HTTP. Prints `name: value unit` lines.
 *
 * Run with `npm run bench -- webhooks`.
 */
import { Appexec, AppexecLayer, IdGenerator, SigningKeys, WebhookDispatcher, WebhookSignature } from "@appexec/core"
import { NodeOutboundHttp } from "@appexec/platform-node"
import { MemoryStorage, TestApps, TestHarness } from "@appexec/testing"
import * as ed from "@noble/ed25519"
import { Effect, Layer, Logger, LogLevel } from "effect"
import { createServer } from "node:http"
import type { AddressInfo } from "node:net"
import type { Benchmark } from "./Benchmark.js"

const SIGN_SECONDS = 1
const DELIVERIES = 500

const message = WebhookSignature.signedMessage(
  "1800000000",
  JSON.stringify({ data: { executionId: "x".repeat(36), outputs: [] } })
)
const secretKey = new Uint8Array(32).fill(7)
const secretKeyHex = Buffer.from(secretKey).toString("hex")

/** Signatures per second through the sync path appexec uses. */
const signSync = () => {
  const end = performance.now() + SIGN_SECONDS * 1000
  let n = 0
  while (performance.now() < end) {
    SigningKeys.signHex(message, secretKeyHex)
    n++
  }
  return n / SIGN_SECONDS
}

/** Signatures per second with noble's async API, one after another. */
const signAsync = async () => {
  const end = performance.now() + SIGN_SECONDS * 1000
  let n = 0
  while (performance.now() < end) {
    await ed.signAsync(message, secretKey)
    n++
  }
  return n / SIGN_SECONDS
}

const echo = TestApps.echo

/** Deliveries per second: `DELIVERIES` finished executions in the outbox, drained by one dispatcher. */
const deliveries = Effect.gen(function*() {
  let received = 0
  const server = yield* Effect.acquireRelease(
    Effect.async<ReturnType<typeof createServer>>((resume) => {
      const s = createServer((req, res) => {
        req.resume()
        req.on("end", () => {
          received++
          res.writeHead(204).end()
        })
      })
      s.listen(0, "127.0.0.1", () => resume(Effect.succeed(s)))
    }),
    (s) => Effect.async<void>((resume) => void s.close(() => resume(Effect.void)))
  )
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`
  const appexec = yield* Appexec.Appexec
  const app = yield* appexec.apps.import(echo)
  const principal = yield* TestHarness.signIn()
  const started = []
  for (let i = 0; i < DELIVERIES; i++) {
    started.push(yield* appexec.executions.start(principal, app.appId, { prompt: `${i}` }, { webhook: url }))
  }
  for (const s of started) yield* appexec.executions.await(s.executionId)

  const dispatcher = yield* WebhookDispatcher.make
  const begin = performance.now()
  while ((yield* dispatcher.dispatchDue) > 0) {
    // keep draining
  }
  const seconds = (performance.now() - begin) / 1000
  if (received !== DELIVERIES) return yield* Effect.dieMessage(`received ${received} of ${DELIVERIES} webhooks`)
  return DELIVERIES / seconds
}).pipe(
  Effect.scoped,
  Effect.provide(
    AppexecLayer.make({ webhooks: false, config: { webhookConcurrency: 16 } }).pipe(
      Layer.provideMerge(MemoryStorage.layer),
      Layer.provide(IdGenerator.IdGenerator.random),
      Layer.provideMerge(NodeOutboundHttp.layer({ allowPrivateNetworks: true }))
    )
  ),
  Effect.provide(Logger.minimumLogLevel(LogLevel.Warning))
)

/** The webhook benchmarks. */
export const benchmark: Benchmark = {
  name: "webhooks",
  run: (report) =>
    Effect.gen(function*() {
      yield* report({ name: "webhook signatures (noble sync)", value: Math.round(signSync()), unit: "signatures/s" })
      yield* report({
        name: "webhook signatures (noble async)",
        value: Math.round(yield* Effect.promise(signAsync)),
        unit: "signatures/s"
      })
      yield* report({
        name: "webhook deliveries (local receiver, 16 at a time)",
        value: Math.round(yield* deliveries),
        unit: "deliveries/s"
      })
    })
}
