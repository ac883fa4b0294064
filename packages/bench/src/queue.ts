/**
 * Queue benchmark: no-op executions (one text input wired to one text output) started and run
 * to `completed` by one in-process worker, on SQLite files and in memory.
 *
 * Figures per storage: throughput for 1,000 and 10,000 executions started at once (first start
 * to last completion), p50/p99 start→completed under that load, and p50/p99 when idle (one
 * execution at a time).
 */
import { Appexec, type AppexecConfig, AppexecLayer, ExecutionEvents, IdGenerator } from "@appexec/core"
import { NodeOutboundHttp } from "@appexec/platform-node"
import { SqliteStorage } from "@appexec/sqlite"
import { MemoryStorage } from "@appexec/testing"
import { Effect, Layer, Logger, LogLevel, Queue } from "effect"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import type { Benchmark, Figure } from "./Benchmark.js"

const noop = {
  name: "No-op",
  public: true,
  nodes: [
    { id: "in", type: "input.text", label: "In", config: { name: "in", required: true } },
    { id: "out", type: "output.text", label: "Out" }
  ],
  edges: [{ source: "in", target: "out" }]
}

const now = Effect.sync(() => performance.now())

const percentile = (sorted: ReadonlyArray<number>, p: number) =>
  sorted.length === 0 ? Number.NaN : sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!

type Storage = Layer.Layer<AppexecLayer.Storage, unknown>

/** Runs `count` executions started at once; returns the throughput and the start→completed times. */
const batch = (count: number, concurrency: number) =>
  Effect.scoped(
    Effect.gen(function*() {
      const appexec = yield* Appexec.Appexec
      const events = yield* ExecutionEvents.ExecutionEvents
      const app = yield* appexec.apps.import(noop, { owner: { public: true } })
      const { key } = yield* appexec.keys.create({ workspace: "bench" })
      const principal = yield* appexec.keys.authenticate({ "x-api-key": key })
      const subscription = yield* events.subscribe
      const startedAt = new Map<string, number>()
      const latencies: Array<number> = []
      const done = Effect.gen(function*() {
        while (latencies.length < count) {
          const record = yield* Queue.take(subscription)
          if (record.status === "completed" || record.status === "failed") {
            const t = yield* now
            const start = startedAt.get(record.executionId)
            if (start !== undefined) latencies.push(t - start)
          }
        }
      })
      const waiting = yield* Effect.fork(done)
      const t0 = yield* now
      yield* Effect.forEach(
        Array.from({ length: count }, (_, i) => i),
        (i) =>
          Effect.gen(function*() {
            const t = yield* now
            const started = yield* appexec.executions.start(principal, app.appId, { in: `${i}` })
            startedAt.set(started.executionId, t)
          }),
        { concurrency, discard: true }
      )
      yield* waiting.await
      const elapsed = (yield* now) - t0
      latencies.sort((a, b) => a - b)
      return { perSecond: (count / elapsed) * 1000, latencies }
    })
  )

/** Runs `count` executions one after the other, each awaited; returns the start→completed times. */
const idle = (count: number) =>
  Effect.gen(function*() {
    const appexec = yield* Appexec.Appexec
    const app = yield* appexec.apps.import(noop, { owner: { public: true } })
    const { key } = yield* appexec.keys.create({ workspace: "bench-idle" })
    const principal = yield* appexec.keys.authenticate({ "x-api-key": key })
    const latencies: Array<number> = []
    for (let i = 0; i < count; i++) {
      const t = yield* now
      const started = yield* appexec.executions.start(principal, app.appId, { in: `${i}` })
      yield* appexec.executions.await(started.executionId)
      latencies.push((yield* now) - t)
    }
    return latencies.sort((a, b) => a - b)
  })

const instance = (storage: Storage, config: Partial<AppexecConfig.AppexecOptions>) =>
  AppexecLayer.make({ config }).pipe(
    Layer.provide(storage),
    Layer.provide(IdGenerator.IdGenerator.random),
    Layer.provide(NodeOutboundHttp.layer({ allowPrivateNetworks: true }))
  )

const tempDb = (label: string) => {
  const dir = mkdtempSync(join(tmpdir(), `appexec-bench-${label}-`))
  return { filename: join(dir, "appexec.db"), cleanup: () => rmSync(dir, { recursive: true, force: true }) }
}

interface Target {
  readonly name: string
  readonly storage: () => { readonly layer: Storage; readonly cleanup: () => void }
}

const targets: ReadonlyArray<Target> = [
  {
    name: "sqlite",
    storage: () => {
      const db = tempDb("sqlite")
      return { layer: SqliteStorage.layer({ filename: db.filename }), cleanup: db.cleanup }
    }
  },
  {
    name: "sqlite_full_sync",
    storage: () => {
      const db = tempDb("sqlite-full")
      return { layer: SqliteStorage.layer({ filename: db.filename, synchronous: "full" }), cleanup: db.cleanup }
    }
  },
  { name: "memory", storage: () => ({ layer: MemoryStorage.layer, cleanup: () => {} }) }
]

const WORKER = { workerConcurrency: 16 }

const ms = (name: string, value: number): Figure => ({ name, value, unit: "ms" })

/** Warms the JIT up on a short in-memory run, so the first figures are not cold-start figures. */
const warmUp = batch(500, 64).pipe(Effect.provide(instance(MemoryStorage.layer, WORKER)), Effect.asVoid)

/** The queue benchmark. */
export const benchmark: Benchmark = {
  name: "queue",
  run: (report) =>
    Effect.zipRight(
      warmUp,
      Effect.forEach(
        targets,
        (target) =>
          Effect.gen(function*() {
            for (const count of [1_000, 10_000]) {
              const storage = target.storage()
              const result = yield* batch(count, 64).pipe(
                Effect.provide(instance(storage.layer, WORKER)),
                Effect.ensuring(Effect.sync(storage.cleanup))
              )
              const prefix = `queue.${target.name}.${count}`
              yield* report({ name: `${prefix}.throughput`, value: result.perSecond, unit: "executions/s" })
              yield* report(ms(`${prefix}.start_to_completed_p50`, percentile(result.latencies, 50)))
              yield* report(ms(`${prefix}.start_to_completed_p99`, percentile(result.latencies, 99)))
            }
            const storage = target.storage()
            const latencies = yield* idle(300).pipe(
              Effect.provide(instance(storage.layer, {})),
              Effect.ensuring(Effect.sync(storage.cleanup))
            )
            yield* report(ms(`queue.${target.name}.idle.start_to_completed_p50`, percentile(latencies, 50)))
            yield* report(ms(`queue.${target.name}.idle.start_to_completed_p99`, percentile(latencies, 99)))
          }),
        { discard: true }
      )
    ).pipe(Effect.provide(Logger.minimumLogLevel(LogLevel.Warning)))
}
