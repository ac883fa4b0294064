/**
 * Durability with real processes on one SQLite file: `kill -9` after acceptance, `kill -9`
 * during a run, and two processes sharing the file.
 */
import { Appexec, AppexecLayer, IdGenerator } from "@appexec/core"
import { SqliteStorage } from "@appexec/sqlite"
import { TestOutboundHttp } from "@appexec/testing"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { mkdtemp, rm } from "node:fs/promises"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { executionIds, readInvocations, spawnInstance, statusCounts, waitUntil } from "./fixtures/processes.js"
import { recordApp, recordNode } from "./fixtures/recordNode.js"

const LEASE_MS = 1_000

/** A temporary directory with a database seeded with the recorder app and an API key. */
const seeded = (nodeMs: number) =>
  Effect.gen(function*() {
    const dir = yield* Effect.acquireRelease(
      Effect.promise(() => mkdtemp(join(tmpdir(), "appexec-durability-"))),
      (dir) => Effect.promise(() => rm(dir, { recursive: true, force: true }))
    )
    const db = join(dir, "appexec.db")
    const log = join(dir, "invocations.log")
    const { appId, key } = yield* Effect.gen(function*() {
      const appexec = yield* Appexec.Appexec
      const app = yield* appexec.apps.import(recordApp(nodeMs), { owner: { public: true } })
      const created = yield* appexec.keys.create({ workspace: "durability", user: "tester" })
      return { appId: app.appId, key: created.key }
    }).pipe(Effect.provide(instanceOn(db, false)))
    const env = {
      APPEXEC_TEST_DB: db,
      APPEXEC_TEST_LOG: log,
      APPEXEC_TEST_KEY: key,
      APPEXEC_TEST_APP: appId,
      APPEXEC_TEST_LEASE_MS: String(LEASE_MS)
    }
    return { dir, db, log, appId, key, env }
  })

const instanceOn = (filename: string, worker: boolean) =>
  AppexecLayer.make({ nodes: [recordNode], worker }).pipe(
    Layer.provide(SqliteStorage.layer({ filename })),
    Layer.provide(IdGenerator.IdGenerator.random),
    Layer.provide(TestOutboundHttp.layer)
  )

describe("durability with real processes", () => {
  it.scopedLive(
    "every accepted execution survives kill -9 and completes after a restart",
    () =>
      Effect.gen(function*() {
        const { db, log, env } = yield* seeded(20)
        const first = yield* spawnInstance({ ...env, APPEXEC_TEST_START: "100" })
        const accepted = (yield* first.waitForLines("accepted ", 100, 20_000)).map((l) => l.slice("accepted ".length))
        yield* first.kill9
        expect(new Set(accepted).size).toBe(100)
        const stored = new Set(executionIds(db))
        expect(accepted.filter((id) => !stored.has(id))).toEqual([])
        const second = yield* spawnInstance(env)
        yield* waitUntil("100 completed executions", () => statusCounts(db).completed === 100, 20_000)
        yield* second.kill9
        expect(statusCounts(db)).toEqual({ completed: 100 })
        const ended = new Set(readInvocations(log).filter((i) => i.event === "end").map((i) => i.executionId))
        expect(accepted.filter((id) => !ended.has(id))).toEqual([])
      }),
    40_000
  )

  it.scopedLive(
    "an execution whose process is killed while it runs runs again after its lease expires",
    () =>
      Effect.gen(function*() {
        const { db, log, env } = yield* seeded(1_500)
        const first = yield* spawnInstance({ ...env, APPEXEC_TEST_START: "1" })
        const [line] = yield* first.waitForLines("accepted ", 1, 15_000)
        const executionId = line!.slice("accepted ".length)
        yield* waitUntil("the first run to start", () => readInvocations(log).some((i) => i.event === "start"), 15_000)
        // A run's start is saved with the writes of a later turn, not before its node begins (RunSaves):
        // the kill comes once it is stored, so the file holds a running execution under a live lease.
        yield* waitUntil("the first run's start to be stored", () => statusCounts(db).running === 1, 15_000)
        yield* first.kill9
        const killedAt = Date.now()
        expect(statusCounts(db)).toEqual({ running: 1 })
        const second = yield* spawnInstance(env)
        yield* waitUntil("the execution to complete", () => statusCounts(db).completed === 1, 20_000)
        yield* second.kill9
        const runs = readInvocations(log).filter((i) => i.executionId === executionId)
        expect(runs.map((r) => [r.pid, r.event])).toEqual([
          [first.pid, "start"],
          [second.pid, "start"],
          [second.pid, "end"]
        ])
        const firstStart = runs[0]!.at
        // The second attempt waited for the first claim's lease to lapse.
        expect(runs[1]!.at).toBeGreaterThanOrEqual(firstStart + LEASE_MS - 50)
        expect(runs[1]!.at).toBeGreaterThanOrEqual(killedAt)
      }),
    40_000
  )

  it.scopedLive(
    "two processes on one file: 50 concurrent starts all complete, each run exactly once, no SQLITE_BUSY",
    () =>
      Effect.gen(function*() {
        const { db, log, env, appId, key } = yield* seeded(30)
        const workers = [yield* spawnInstance(env), yield* spawnInstance(env)]
        for (const worker of workers) yield* worker.waitForLines("ready", 1, 15_000)
        const started = yield* Effect.gen(function*() {
          const appexec = yield* Appexec.Appexec
          const principal = yield* appexec.keys.authenticate({ "x-api-key": key })
          return yield* Effect.all(
            Array.from({ length: 50 }, (_, i) => appexec.executions.start(principal, appId, { text: `run ${i}` })),
            { concurrency: "unbounded" }
          )
        }).pipe(Effect.provide(instanceOn(db, false)))
        expect(started.length).toBe(50)
        yield* waitUntil("50 completed executions", () => statusCounts(db).completed === 50, 20_000)
        expect(statusCounts(db)).toEqual({ completed: 50 })
        const invocations = readInvocations(log)
        for (const { executionId } of started) {
          const runs = invocations.filter((i) => i.executionId === executionId)
          expect(runs.map((r) => r.event)).toEqual(["start", "end"])
          expect(runs[0]!.pid).toBe(runs[1]!.pid)
        }
        const pids = new Set(invocations.map((i) => i.pid))
        expect(pids).toEqual(new Set(workers.map((w) => w.pid)))
        for (const worker of workers) {
          yield* worker.kill9
          expect(worker.stderr()).not.toMatch(/SQLITE_BUSY|database is locked|StorageError/)
        }
      }),
    40_000
  )
})
