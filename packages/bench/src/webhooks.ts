/**
 * Webhook benchmarks: Ed25519 signatures per second with `@noble/ed25519` (sync, the path
 * appexec uses, and async), then signed webhook deliveries per second from the dispatcher to a
 * receiver over real HTTP, with the signatures made on a worker thread (`NodeWebhookSigner`, as
 * `appexec serve` runs) and on the main thread (core's default), each followed by where its CPU
 * went: this process's main thread, its other threads (the signer worker, V8's garbage
 * collection and compiler threads), and the receiver. The receiver runs in a process of its own,
 * as a real receiver is another service. Prints `name: value unit` lines.
 *
 * The runs with the worker signer are three (each on a fresh file), and their median is the
 * figure: on two cores shared by the dispatcher, its signer, V8's threads and the receiver, one
 * run can differ from the next by a third.
 *
 * Run with `npm run bench -- webhooks`; `APPEXEC_BENCH_WEBHOOKS_PARTS=sign,deliver`,
 * `APPEXEC_BENCH_WEBHOOKS_SIGNER=worker,thread`, `APPEXEC_BENCH_WEBHOOKS_COUNT` (deliveries of a
 * run, default 10,000), `APPEXEC_BENCH_WEBHOOKS_CONCURRENCY` (the dispatcher's
 * `webhookConcurrency`; its default when unset), `APPEXEC_BENCH_WEBHOOKS_PROFILE=<file>` (a CPU
 * profile of the main thread during the last delivery run).
 */
import {
  Appexec,
  AppexecConfig,
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
import { writeFileSync } from "node:fs"
import { Session } from "node:inspector"
import { join } from "node:path"
import { performance } from "node:perf_hooks"
import type { Benchmark } from "./Benchmark.js"
import * as ProcessCpu from "./ProcessCpu.js"
import * as TempDir from "./TempDir.js"

const SIGN_SECONDS = 1
/** Deliveries of the delivery run (`APPEXEC_BENCH_WEBHOOKS_COUNT` for other runs). */
const DELIVERIES = Number(process.env["APPEXEC_BENCH_WEBHOOKS_COUNT"] ?? 10_000)
/** Deliveries of the unreported run that precedes the figures. */
const WARM_UP = 1_000
/** Deliveries under way at once (`webhookConcurrency`; `APPEXEC_BENCH_WEBHOOKS_CONCURRENCY`, else its default). */
const CONCURRENCY = Number(
  process.env["APPEXEC_BENCH_WEBHOOKS_CONCURRENCY"] ?? AppexecConfig.defaults.webhookConcurrency
)
/** Delivery runs with the worker signer; the median is reported. */
const WORKER_RUNS = 3
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

/**
 * With `APPEXEC_BENCH_WEBHOOKS_PROFILE=<file>`, a CPU profile of the main thread during the
 * delivery run (the last run's, in Chrome's `.cpuprofile` format); the effect that stops it and
 * writes the file.
 */
const startProfile = Effect.gen(function*() {
  const file = process.env["APPEXEC_BENCH_WEBHOOKS_PROFILE"]
  if (file === undefined) return Effect.void
  const session = new Session()
  session.connect()
  const post = (method: string) =>
    Effect.async<unknown>((resume) =>
      session.post(method, (error, result) => resume(error === null ? Effect.succeed(result) : Effect.die(error)))
    )
  yield* post("Profiler.enable")
  yield* post("Profiler.start")
  return post("Profiler.stop").pipe(
    Effect.map((result) => {
      writeFileSync(file, JSON.stringify((result as { readonly profile: unknown }).profile))
      session.disconnect()
    })
  )
})

/** Where the time of a delivery run went, in microseconds per delivery. */
interface Breakdown {
  readonly rate: number
  /** CPU time of this process (every thread: engine, signer worker, SQLite, GC). */
  readonly processCpu: number
  /** CPU time of the main thread (engine, dispatcher, HTTP client, SQLite calls). */
  readonly mainThreadCpu: number | undefined
  /** Time the main thread's event loop was busy (CPU, and waiting for a core on a loaded machine). */
  readonly mainThreadBusy: number
  /** CPU time of the receiver's process. */
  readonly receiverCpu: number
}

/**
 * Deliveries per second: `count` finished executions in the outbox of a SQLite file (as
 * `appexec serve` keeps it), drained by the dispatcher's own loop, `CONCURRENCY` deliveries at a time, to a
 * receiver in another process over real HTTP; first attempt to last answer. `pool`: the
 * signatures made by `NodeWebhookSigner` (one worker, as `appexec serve` runs it), else on the
 * main thread (core's default).
 */
const deliveries = (pool: NodeWebhookSigner.Pool | undefined, count: number = DELIVERIES) =>
  Effect.gen(function*() {
    const dir = yield* TempDir.make("webhooks")
    const layer = AppexecLayer.make({ webhooks: false, config: { webhookConcurrency: CONCURRENCY } }).pipe(
      Layer.provideMerge(SqliteStorage.layer({ filename: join(dir, "appexec.db") })),
      Layer.provide(IdGenerator.IdGenerator.random),
      Layer.provideMerge(NodeOutboundHttp.layer({ allowPrivateNetworks: true })),
      Layer.provide(
        pool === undefined ? WebhookSigner.layer : Layer.succeed(WebhookSigner.WebhookSigner, pool.signer)
      )
    )
    const { done, port } = yield* receiver(count)
    const url = `http://127.0.0.1:${port}/hook`
    return yield* Effect.gen(function*() {
      const appexec = yield* Appexec.Appexec
      const app = yield* appexec.apps.import(echo)
      const principal = yield* TestHarness.signIn()
      const started = yield* Effect.forEach(
        Array.from({ length: count }, (_, i) => i),
        (i) => appexec.executions.start(principal, app.appId, { prompt: `${i}` }, { webhook: url }),
        { concurrency: 64 }
      )
      yield* Effect.forEach(started, (s) => appexec.executions.await(s.executionId), {
        concurrency: 64,
        discard: true
      })

      const profiling = yield* startProfile
      const begin = performance.now()
      const cpu = process.cpuUsage()
      const threads = ProcessCpu.ofThreads()
      const elu = performance.eventLoopUtilization()
      yield* Effect.forkScoped(WebhookDispatcher.run)
      // A delivery lost for good would leave the count short: the run fails rather than wait forever.
      const receiverCpu = yield* done.pipe(
        Effect.timeoutFail({
          duration: "120 seconds",
          onTimeout: () => new Error(`not all of ${count} delivered`)
        })
      )
      const seconds = (performance.now() - begin) / 1000
      yield* profiling
      const used = process.cpuUsage(cpu)
      const threadsAfter = ProcessCpu.ofThreads()
      const mainThreadBusy = performance.eventLoopUtilization(elu).active * 1000
      return {
        rate: count / seconds,
        processCpu: (used.user + used.system) / count,
        mainThreadCpu: threads === undefined || threadsAfter === undefined
          ? undefined
          : (threadsAfter.main - threads.main) / count,
        mainThreadBusy: mainThreadBusy / count,
        receiverCpu: receiverCpu / count
      } satisfies Breakdown
    }).pipe(Effect.provide(layer))
  }).pipe(Effect.scoped, Effect.provide(Logger.minimumLogLevel(LogLevel.Warning)))

/** The webhook benchmarks. */
export const benchmark: Benchmark = {
  name: "webhooks",
  run: (report) =>
    Effect.scoped(Effect.gen(function*() {
      if (parts.has("sign")) {
        yield* report({ name: "webhook signatures (noble sync)", value: Math.round(signSync()), unit: "signatures/s" })
        yield* report({
          name: "webhook signatures (noble async)",
          value: Math.round(yield* Effect.promise(signAsync)),
          unit: "signatures/s"
        })
      }
      if (!parts.has("deliver")) return
      // One pool for every run, as a server keeps one: its worker's code is compiled once.
      const pool = yield* NodeWebhookSigner.makePool()
      const poolOf = (signer: "worker" | "thread") => (signer === "worker" ? pool : undefined)
      // A first, shorter run unreported: the code of a delivery is compiled before any figure.
      yield* deliveries(poolOf(signers[0] ?? "worker"), WARM_UP)
      for (const signer of signers) {
        const where = signer === "worker" ? "signing on a worker thread" : "signing in-thread"
        const runs: Array<Breakdown> = []
        for (let i = 0; i < (signer === "worker" ? WORKER_RUNS : 1); i++) runs.push(yield* deliveries(poolOf(signer)))
        const name = `webhook deliveries (receiver in another process, ${CONCURRENCY} at a time, ${where})`
        if (runs.length > 1) {
          for (const [i, each] of runs.entries()) {
            yield* report({
              name: `  run ${i + 1} of ${runs.length}`,
              value: Math.round(each.rate),
              unit: "deliveries/s"
            })
          }
        }
        // The median run (by rate), with its own breakdown.
        const run = [...runs].sort((a, b) => a.rate - b.rate)[Math.floor(runs.length / 2)]!
        yield* report({
          name: runs.length > 1 ? `${name}, median of ${runs.length}` : name,
          value: Math.round(run.rate),
          unit: "deliveries/s"
        })
        const perDelivery = (name: string, value: number) =>
          report({ name: `  ${name}`, value: Math.round(value), unit: "µs per delivery" })
        yield* perDelivery("CPU of the dispatching process (all threads)", run.processCpu)
        if (run.mainThreadCpu !== undefined) {
          yield* perDelivery("  of which the main thread", run.mainThreadCpu)
          yield* perDelivery("  of which other threads (signer worker, GC, I/O)", run.processCpu - run.mainThreadCpu)
        }
        yield* perDelivery("main thread's event loop busy (CPU and waiting for a core)", run.mainThreadBusy)
        yield* perDelivery("CPU of the receiver process", run.receiverCpu)
      }
    }))
}
