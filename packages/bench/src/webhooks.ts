/**
 * Webhook benchmarks: Ed25519 signatures per second with `@noble/ed25519` (sync, with SHA-512
 * from node:crypto, and async, with WebCrypto SHA-512), and signed webhook deliveries per second
 * from the dispatcher to a local receiver over real HTTP. Prints `name: value unit` lines.
 *
 * Run with `npm run bench -- webhooks`.
 */
import {
  Appexec,
  AppexecLayer,
  IdGenerator,
  SigningKeys,
  WebhookDispatcher,
  WebhookSignature,
  WebhookSigner
} from "@appexec/core"
import { NodeOutboundHttp, NodeWebhookSigner } from "@appexec/platform-node"
import { SqliteStorage } from "@appexec/sqlite"
import { TestApps, TestHarness } from "@appexec/testing"
import * as ed from "@noble/ed25519"
import { Deferred, Effect, Exit, Layer, Logger, LogLevel } from "effect"
import { spawn } from "node:child_process"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { performance } from "node:perf_hooks"
import type { Benchmark } from "./Benchmark.js"

const SIGN_SECONDS = 1
/** Deliveries of the delivery run (`APPEXEC_BENCH_WEBHOOKS_COUNT` for other runs). */
const DELIVERIES = Number(process.env["APPEXEC_BENCH_WEBHOOKS_COUNT"] ?? 2_000)
/** `APPEXEC_BENCH_WEBHOOKS_PARTS`: `sign`, `deliver` (comma-separated; both when unset). */
const parts = new Set((process.env["APPEXEC_BENCH_WEBHOOKS_PARTS"] ?? "sign,deliver").split(","))
/** `APPEXEC_BENCH_WEBHOOKS_SIGNER`: `worker`, `thread` (comma-separated; both, worker first, when unset). */
const signers = (process.env["APPEXEC_BENCH_WEBHOOKS_SIGNER"] ?? "worker,thread")
  .split(",")
  .filter((s): s is "worker" | "thread" => s === "worker" || s === "thread")

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
 * The receiver: another process (as a real receiver is another service), so that its share of
 * the CPU is not counted in the dispatcher's thread. It answers every POST with 204, prints its
 * port, and once `count` requests came, its own CPU time in microseconds.
 */
const receiverScript = `
const http = require("node:http")
const count = Number(process.argv[1])
let received = 0
const start = process.cpuUsage()
const server = http.createServer((req, res) => {
  req.resume()
  req.on("end", () => {
    res.writeHead(204).end()
    if (++received === count) {
      const used = process.cpuUsage(start)
      process.stdout.write("done " + (used.user + used.system) + "\\n")
    }
  })
})
server.keepAliveTimeout = 10000
server.listen(0, "127.0.0.1", () => process.stdout.write("port " + server.address().port + "\\n"))
`

/** Starts the receiver; the port it listens on, and an effect that waits for its report of CPU time. */
const receiver = (count: number) =>
  Effect.gen(function*() {
    const child = yield* Effect.acquireRelease(
      Effect.sync(() =>
        spawn(process.execPath, ["-e", receiverScript, String(count)], { stdio: ["ignore", "pipe", "inherit"] })
      ),
      (child) => Effect.sync(() => child.kill())
    )
    const port = yield* Deferred.make<number>()
    const cpu = yield* Deferred.make<number>()
    let text = ""
    child.stdout.setEncoding("utf8")
    child.stdout.on("data", (chunk: string) => {
      text += chunk
      for (const line of text.split("\n").slice(0, -1)) {
        const [word, value] = line.split(" ")
        if (word === "port") Deferred.unsafeDone(port, Exit.succeed(Number(value)))
        if (word === "done") Deferred.unsafeDone(cpu, Exit.succeed(Number(value)))
      }
      text = text.slice(text.lastIndexOf("\n") + 1)
    })
    return { port: yield* Deferred.await(port), done: Deferred.await(cpu) }
  })

/** Where the time of a delivery run went, in microseconds per delivery. */
interface Breakdown {
  readonly rate: number
  /** CPU time of this process (every thread: engine, signer workers, SQLite, GC). */
  readonly processCpu: number
  /** Time the main thread's event loop was busy. */
  readonly mainThread: number
  /** Time the signer workers were busy (0 when signing in-thread). */
  readonly signerThreads: number
  /** CPU time of the receiver's process. */
  readonly receiverCpu: number
}

/**
 * Deliveries per second: `DELIVERIES` finished executions in the outbox of a SQLite file (as
 * `appexec serve` keeps it), drained by the dispatcher's own loop, 16 deliveries at a time, to a
 * receiver in another process over real HTTP; first attempt to last answer. `signer`: the
 * signatures made on the main thread (core's default) or by `NodeWebhookSigner` (one worker,
 * as `appexec serve` runs it).
 */
const deliveries = (signer: "thread" | "worker") =>
  Effect.gen(function*() {
    const dir = yield* Effect.acquireRelease(
      Effect.sync(() => mkdtempSync(join(tmpdir(), "appexec-bench-webhooks-"))),
      (dir) => Effect.sync(() => rmSync(dir, { recursive: true, force: true }))
    )
    const pool = signer === "worker" ? yield* NodeWebhookSigner.makePool() : undefined
    const layer = AppexecLayer.make({ webhooks: false, config: { webhookConcurrency: 16 } }).pipe(
      Layer.provideMerge(SqliteStorage.layer({ filename: join(dir, "appexec.db") })),
      Layer.provide(IdGenerator.IdGenerator.random),
      Layer.provideMerge(NodeOutboundHttp.layer({ allowPrivateNetworks: true })),
      Layer.provide(
        pool === undefined ? WebhookSigner.layer : Layer.succeed(WebhookSigner.WebhookSigner, pool.signer)
      )
    )
    const { done, port } = yield* receiver(DELIVERIES)
    const url = `http://127.0.0.1:${port}/hook`
    return yield* Effect.gen(function*() {
      const appexec = yield* Appexec.Appexec
      const app = yield* appexec.apps.import(echo)
      const principal = yield* TestHarness.signIn()
      const started = yield* Effect.forEach(
        Array.from({ length: DELIVERIES }, (_, i) => i),
        (i) => appexec.executions.start(principal, app.appId, { prompt: `${i}` }, { webhook: url }),
        { concurrency: 64 }
      )
      yield* Effect.forEach(started, (s) => appexec.executions.await(s.executionId), {
        concurrency: 64,
        discard: true
      })

      const begin = performance.now()
      const cpu = process.cpuUsage()
      const elu = performance.eventLoopUtilization()
      yield* Effect.forkScoped(WebhookDispatcher.run)
      // A delivery lost for good would leave the count short: the run fails rather than wait forever.
      const receiverCpu = yield* done.pipe(
        Effect.timeoutFail({
          duration: "120 seconds",
          onTimeout: () => new Error(`not all of ${DELIVERIES} delivered`)
        })
      )
      const seconds = (performance.now() - begin) / 1000
      const used = process.cpuUsage(cpu)
      const mainThread = performance.eventLoopUtilization(elu).active * 1000
      // The workers start with the first signature: their whole life is the delivery run.
      const signerThreads = (pool?.workers() ?? []).reduce(
        (sum, w) => sum + (w === undefined ? 0 : w.performance.eventLoopUtilization().active * 1000),
        0
      )
      return {
        rate: DELIVERIES / seconds,
        processCpu: (used.user + used.system) / DELIVERIES,
        mainThread: mainThread / DELIVERIES,
        signerThreads: signerThreads / DELIVERIES,
        receiverCpu: receiverCpu / DELIVERIES
      } satisfies Breakdown
    }).pipe(Effect.provide(layer))
  }).pipe(Effect.scoped, Effect.provide(Logger.minimumLogLevel(LogLevel.Warning)))

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
      for (const signer of signers) {
        const where = signer === "worker" ? "signing on a worker thread" : "signing in-thread"
        const run = yield* deliveries(signer)
        yield* report({
          name: `webhook deliveries (receiver in another process, 16 at a time, ${where})`,
          value: Math.round(run.rate),
          unit: "deliveries/s"
        })
        const perDelivery = (name: string, value: number) =>
          report({ name: `  ${name}`, value: Math.round(value), unit: "µs per delivery" })
        yield* perDelivery("CPU of the dispatching process (all threads)", run.processCpu)
        yield* perDelivery("main thread busy", run.mainThread)
        yield* perDelivery("signer worker busy", run.signerThreads)
        yield* perDelivery("CPU of the receiver process", run.receiverCpu)
      }
    })
}
