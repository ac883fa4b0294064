/**
 * Queue benchmark: no-op executions (one text input wired to one text output) started and run
 * to `completed` by one in-process worker, on SQLite files and in memory.
 *
 * With appexec's defaults (as `appexec serve` uses them): 10,000 executions started at once on a
 * SQLite file beside the storage floor of the same work written plainly against better-sqlite3
 * (`Floor.ts`), in five alternate rounds, and the median of their ratios, with
 * `synchronous=NORMAL` (the default) and `FULL`; memory
 * storage; 100,000 executions with the peak RSS; the same 10,000 with 1, 256 and 10,000 of them
 * awaited at once; and start→completed p50/p99 when idle (one execution at a time).
 */
import { Appexec, type AppexecConfig, AppexecLayer, ExecutionEvents, IdGenerator } from "@appexec/core"
import { NodeOutboundHttp } from "@appexec/platform-node"
import { SqliteStorage } from "@appexec/sqlite"
import { MemoryStorage } from "@appexec/testing"
import { Effect, FiberSet, Layer, Logger, LogLevel, Queue } from "effect"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { setFlagsFromString } from "node:v8"
import { runInNewContext } from "node:vm"
import type { Benchmark, Figure } from "./Benchmark.js"
import { floor } from "./Floor.js"
import { noop } from "./NoopApp.js"
import * as Percentile from "./Percentile.js"

const now = Effect.sync(() => performance.now())

type Storage = Layer.Layer<AppexecLayer.Storage, unknown>

/**
 * Runs `count` executions started at once, `awaits` of them each awaited by a fiber of its own
 * with `executions.await` while they run; returns the throughput (first start to last completion)
 * and the start→completed times.
 */
const batch = (count: number, concurrency: number, awaits = 0) =>
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
      // Transitions are taken in bursts, as they pile up: the measuring costs little beside the engine.
      const done = Effect.gen(function*() {
        while (latencies.length < count) {
          const records = yield* Queue.takeBetween(subscription, 1, Number.MAX_SAFE_INTEGER)
          const t = performance.now()
          for (const record of records) {
            if (record.status !== "completed" && record.status !== "failed") continue
            const start = startedAt.get(record.executionId)
            if (start !== undefined) latencies.push(t - start)
          }
        }
      })
      const waiting = yield* Effect.fork(done)
      const awaiting = yield* FiberSet.make()
      const cpu0 = process.cpuUsage()
      const t0 = yield* now
      yield* Effect.forEach(
        Array.from({ length: count }, (_, i) => i),
        (i) =>
          Effect.gen(function*() {
            const t = yield* now
            const started = yield* appexec.executions.start(principal, app.appId, { in: `${i}` })
            startedAt.set(started.executionId, t)
            if (i < awaits) yield* FiberSet.run(awaiting, appexec.executions.await(started.executionId))
          }),
        { concurrency, discard: true }
      )
      yield* waiting.await
      const elapsed = (yield* now) - t0
      const cpu = process.cpuUsage(cpu0)
      yield* FiberSet.awaitEmpty(awaiting)
      latencies.sort((a, b) => a - b)
      return { perSecond: (count / elapsed) * 1000, latencies, cpuPerExecution: (cpu.user + cpu.system) / count }
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

const ms = (name: string, value: number): Figure => ({ name, value, unit: "ms" })
const perSecond = (name: string, value: number): Figure => ({ name, value, unit: "executions/s" })

/** Peak resident set size of this process so far, in MiB. */
const peakRss = Effect.sync(() => process.resourceUsage().maxRSS / 1024)

/**
 * The heap in use after a full collection, in MiB: what the process keeps, where the peak RSS
 * also counts the garbage of the moment. (`--expose-gc` set at run time, for this measure only.)
 */
const heapAfterGc = Effect.sync(() => {
  setFlagsFromString("--expose-gc")
  const gc = runInNewContext("gc") as () => void
  gc()
  gc()
  return process.memoryUsage().heapUsed / 1024 / 1024
})

const DEFAULTS = {}

/** Runs `run` on a fresh SQLite file with appexec's defaults (as `appexec serve` uses them). */
const onSqlite = <A, E>(
  run: Effect.Effect<A, E, Appexec.Appexec | ExecutionEvents.ExecutionEvents>,
  options: { readonly synchronous?: "normal" | "full" } = {},
  config: Partial<AppexecConfig.AppexecOptions> = DEFAULTS
) => {
  const db = tempDb("sqlite")
  return run.pipe(
    Effect.provide(instance(SqliteStorage.layer({ filename: db.filename, ...options }), config)),
    Effect.ensuring(Effect.sync(db.cleanup))
  )
}

/** Executions of the SQLite warm-up. */
const WARM_UP = 10_000

/**
 * Warms the JIT up, so the first figures are not cold-start figures: a short in-memory run, then
 * 10,000 executions on a SQLite file (the SQLite paths — group commit, claims, rows — take that
 * many before their CPU per execution settles; the floor, plain better-sqlite3, needs none).
 */
const warmUp = Effect.zipRight(
  batch(2_000, 64).pipe(Effect.provide(instance(MemoryStorage.layer, {}))),
  Effect.suspend(() => onSqlite(batch(WARM_UP, 64)))
).pipe(Effect.asVoid)

const floorOf = (count: number, synchronous: "NORMAL" | "FULL") =>
  Effect.sync(() => {
    const db = tempDb("floor")
    try {
      return floor(db.filename, count, synchronous)
    } finally {
      db.cleanup()
    }
  })

const FLOOR_TARGET = 1.0

type FloorRun = ReturnType<typeof floor>
type EngineRun = Effect.Effect.Success<ReturnType<typeof batch>>

/**
 * Knobs for short runs while working on the engine (the full run takes none):
 * `APPEXEC_BENCH_QUEUE_PARTS` picks parts by name (comma-separated: `normal`, `full`, `memory`,
 * `awaits`, `idle`, `large`; all when unset) and `APPEXEC_BENCH_QUEUE_COUNT` replaces the
 * 10,000 executions of a run (the idle part runs a tenth of it, the large part ten times it).
 */
const parts = new Set((process.env["APPEXEC_BENCH_QUEUE_PARTS"] ?? "normal,full,memory,awaits,idle,large").split(","))
const COUNT = Number(process.env["APPEXEC_BENCH_QUEUE_COUNT"] ?? 10_000)
/**
 * Rounds of the engine beside its floor (`APPEXEC_BENCH_QUEUE_ROUNDS` replaces the 5): a round
 * takes about a second, and single rounds range over ±20% on a shared machine.
 */
const ROUNDS = Math.max(1, Number(process.env["APPEXEC_BENCH_QUEUE_ROUNDS"] ?? 5))

/** The queue benchmark. */
export const benchmark: Benchmark = {
  name: "queue",
  run: (report) =>
    Effect.gen(function*() {
      yield* warmUp
      // (a) the engine through the embedding API and (b) its storage floor, side by side, in
      // alternate rounds: a round is a floor run then an engine run, each on a fresh file, and
      // the ratio is the median of the rounds' ratios, so that a moment when the machine is slow
      // (a neighbour, the disk) weighs on one round rather than on one side.
      for (const synchronous of ["normal", "full"] as const) {
        if (!parts.has(synchronous)) continue
        const label = synchronous === "normal" ? "sqlite" : "sqlite_full_sync"
        const rounds: Array<{ floor: FloorRun; engine: EngineRun }> = []
        for (let round = 0; round < ROUNDS; round++) {
          const floorRun = yield* floorOf(COUNT, synchronous === "normal" ? "NORMAL" : "FULL")
          const engine = yield* onSqlite(batch(COUNT, 64), { synchronous })
          rounds.push({ floor: floorRun, engine })
        }
        const median = (values: ReadonlyArray<number>) => Percentile.of([...values].sort((a, b) => a - b), 50)
        const ratios = rounds.map((r) => r.engine.perSecond / r.floor.perSecond)
        // The round whose ratio is the median gives the latencies.
        const middle = rounds[ratios.indexOf(median(ratios))]!
        yield* report(
          perSecond(`queue.${label}.floor.${COUNT}.throughput`, median(rounds.map((r) => r.floor.perSecond)))
        )
        yield* report(perSecond(`queue.${label}.${COUNT}.throughput`, median(rounds.map((r) => r.engine.perSecond))))
        yield* report({
          name: `queue.${label}.${COUNT}.engine_to_floor`,
          value: median(ratios),
          unit: `of the floor, median of ${ROUNDS} rounds (${
            ratios.map((r) => r.toFixed(2)).join(", ")
          }; target >= ${FLOOR_TARGET})`
        })
        // CPU time is steadier than rates on a shared machine: what one execution costs this process.
        yield* report({
          name: `queue.${label}.floor.${COUNT}.cpu_per_execution`,
          value: median(rounds.map((r) => r.floor.cpuPerExecution)),
          unit: "us"
        })
        yield* report({
          name: `queue.${label}.${COUNT}.cpu_per_execution`,
          value: median(rounds.map((r) => r.engine.cpuPerExecution)),
          unit: "us (engine and storage, this process)"
        })
        yield* report(ms(`queue.${label}.${COUNT}.start_to_completed_p50`, Percentile.of(middle.engine.latencies, 50)))
        yield* report(ms(`queue.${label}.${COUNT}.start_to_completed_p99`, Percentile.of(middle.engine.latencies, 99)))
      }
      if (parts.has("memory")) {
        const memory = yield* batch(COUNT, 64).pipe(Effect.provide(instance(MemoryStorage.layer, DEFAULTS)))
        yield* report(perSecond(`queue.memory.${COUNT}.throughput`, memory.perSecond))
      }

      // Awaits that scale: the same run with 1, 256 and all executions awaited at once.
      if (parts.has("awaits")) {
        const awaited: Record<number, number> = {}
        for (const awaits of [1, 256, COUNT]) {
          const result = yield* onSqlite(batch(COUNT, 64, awaits))
          awaited[awaits] = result.perSecond
          yield* report(perSecond(`queue.sqlite.${COUNT}.with_${awaits}_awaits.throughput`, result.perSecond))
        }
        yield* report({
          name: `queue.sqlite.${COUNT}.awaits_${COUNT}_vs_1`,
          value: awaited[1]! / awaited[COUNT]!,
          unit: "x slower (target <= 2)"
        })
      }

      // Latency when idle: one execution at a time, each awaited.
      if (parts.has("idle")) {
        const idleCount = Math.max(1, Math.round(COUNT / 10))
        const idleSqlite = yield* onSqlite(idle(idleCount))
        yield* report(ms("queue.sqlite.idle.start_to_completed_p50", Percentile.of(idleSqlite, 50)))
        yield* report(ms("queue.sqlite.idle.start_to_completed_p99", Percentile.of(idleSqlite, 99)))
        const idleMemory = yield* idle(idleCount).pipe(Effect.provide(instance(MemoryStorage.layer, DEFAULTS)))
        yield* report(ms("queue.memory.idle.start_to_completed_p50", Percentile.of(idleMemory, 50)))
        yield* report(ms("queue.memory.idle.start_to_completed_p99", Percentile.of(idleMemory, 99)))
      }

      // Memory stays flat: the peak after 100,000 executions against the peak after 10,000.
      if (parts.has("large")) {
        yield* report({ name: `queue.sqlite.${COUNT}.peak_rss`, value: yield* peakRss, unit: "MiB" })
        yield* report({ name: `queue.sqlite.${COUNT}.heap_after_gc`, value: yield* heapAfterGc, unit: "MiB" })
        const large = yield* onSqlite(batch(COUNT * 10, 64))
        yield* report(perSecond(`queue.sqlite.${COUNT * 10}.throughput`, large.perSecond))
        yield* report({ name: `queue.sqlite.${COUNT * 10}.peak_rss`, value: yield* peakRss, unit: "MiB" })
        yield* report({ name: `queue.sqlite.${COUNT * 10}.heap_after_gc`, value: yield* heapAfterGc, unit: "MiB" })
      }
    }).pipe(Effect.provide(Logger.minimumLogLevel(LogLevel.Warning)))
}
