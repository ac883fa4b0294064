/**
 * Webhook benchmarks: Ed25519 signatures per second with `@noble/ed25519` (sync, with SHA-512
 * from node:crypto, and async, with WebCrypto SHA-512), and signed webhook deliveries per second
 * from the dispatcher to a local receiver over real HTTP. Prints `name: value unit` lines.
 *
 * Run with `npm run bench -- webhooks`.
 */
import { Appexec, AppexecLayer, IdGenerator, SigningKeys, WebhookDispatcher, WebhookSignature } from "@appexec/core"
import { NodeOutboundHttp } from "@appexec/platform-node"
import { SqliteStorage } from "@appexec/sqlite"
import { TestApps, TestHarness } from "@appexec/testing"
import * as ed from "@noble/ed25519"
import { Deferred, Effect, Exit, Layer, Logger, LogLevel } from "effect"
import { mkdtempSync, rmSync } from "node:fs"
import { createServer } from "node:http"
import type { AddressInfo } from "node:net"
import { tmpdir } from "node:os"
import { join } from "node:path"
import type { Benchmark } from "./Benchmark.js"

const SIGN_SECONDS = 1
/** Deliveries of the delivery run (`APPEXEC_BENCH_WEBHOOKS_COUNT` for other runs). */
const DELIVERIES = Number(process.env["APPEXEC_BENCH_WEBHOOKS_COUNT"] ?? 2_000)
/** `APPEXEC_BENCH_WEBHOOKS_PARTS`: `sign`, `deliver` (comma-separated; both when unset). */
const parts = new Set((process.env["APPEXEC_BENCH_WEBHOOKS_PARTS"] ?? "sign,deliver").split(","))

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

/**
 * Deliveries per second: `DELIVERIES` finished executions in the outbox of a SQLite file (as
 * `appexec serve` keeps it), drained by the dispatcher's own loop, 16 deliveries at a time, to a
 * receiver in this process over real HTTP; first attempt to last answer.
 */
const deliveries = Effect.gen(function*() {
  let received = 0
  const all = yield* Deferred.make<void>()
  const server = yield* Effect.acquireRelease(
    Effect.async<ReturnType<typeof createServer>>((resume) => {
      const s = createServer((req, res) => {
        req.resume()
        req.on("end", () => {
          received++
          res.writeHead(204).end()
          if (received === DELIVERIES) Deferred.unsafeDone(all, Exit.void)
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
  const started = yield* Effect.forEach(
    Array.from({ length: DELIVERIES }, (_, i) => i),
    (i) => appexec.executions.start(principal, app.appId, { prompt: `${i}` }, { webhook: url }),
    { concurrency: 64 }
  )
  yield* Effect.forEach(started, (s) => appexec.executions.await(s.executionId), { concurrency: 64, discard: true })

  const begin = performance.now()
  yield* Effect.forkScoped(WebhookDispatcher.run)
  // A delivery lost for good would leave the count short: the run fails rather than wait forever.
  yield* Deferred.await(all).pipe(
    Effect.timeoutFail({
      duration: "120 seconds",
      onTimeout: () => new Error(`${received} of ${DELIVERIES} delivered`)
    })
  )
  const seconds = (performance.now() - begin) / 1000
  return DELIVERIES / seconds
}).pipe(
  Effect.scoped,
  Effect.provide(Layer.unwrapScoped(Effect.gen(function*() {
    const dir = yield* Effect.acquireRelease(
      Effect.sync(() => mkdtempSync(join(tmpdir(), "appexec-bench-webhooks-"))),
      (dir) => Effect.sync(() => rmSync(dir, { recursive: true, force: true }))
    )
    return AppexecLayer.make({ webhooks: false, config: { webhookConcurrency: 16 } }).pipe(
      Layer.provideMerge(SqliteStorage.layer({ filename: join(dir, "appexec.db") })),
      Layer.provide(IdGenerator.IdGenerator.random),
      Layer.provideMerge(NodeOutboundHttp.layer({ allowPrivateNetworks: true }))
    )
  }))),
  Effect.provide(Logger.minimumLogLevel(LogLevel.Warning))
)

/** The webhook benchmarks. */
export const benchmark: Benchmark = {
  name: "webhooks",
  run: (report) =>
    Effect.gen(function*() {
      if (parts.has("sign")) {
        yield* report({ name: "webhook signatures (noble sync)", value: Math.round(signSync()), unit: "signatures/s" })
        yield* report({
          name: "webhook signatures (noble async)",
          value: Math.round(yield* Effect.promise(signAsync)),
          unit: "signatures/s"
        })
      }
      if (!parts.has("deliver")) return
      yield* report({
        name: "webhook deliveries (local receiver, 16 at a time)",
        value: Math.round(yield* deliveries),
        unit: "deliveries/s"
      })
    })
}
