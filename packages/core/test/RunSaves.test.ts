/**
 * The saves of the worker's runs (`internal/engine/RunSaves.ts`): every run has a fiber of its own, and
 * the outcomes of the runs that end in one turn are saved together in one write
 * (`ExecutionStore.saveAll`), each fenced by its own lease, then announced and counted one by one.
 */
import { Ids } from "@appexec/api"
import { Appexec, ExecutionEvents, ExecutionLifecycle, ExecutionStore } from "@appexec/core"
import { TestApps, TestHarness } from "@appexec/testing"
import { describe, expect, it } from "@effect/vitest"
import { Deferred, Effect, Either, Exit, Fiber, LogLevel, Option, Queue, Scope, TestClock } from "effect"
import * as Worker from "../src/internal/engine/Worker.js"
import * as LogCapture from "./fixtures/LogCapture.js"

/** input → output: both answer at once. */
const echo = {
  name: "Echo",
  public: true,
  nodes: [
    { id: "prompt", type: "input.text", label: "Prompt", config: { name: "prompt", required: true } },
    { id: "result", type: "output.text", label: "Result" }
  ],
  edges: [{ source: "prompt", target: "result" }]
}

/** The executions of `echo` started with the worker stopped, numbered 0 to n-1. */
const startEchoes = (n: number) =>
  Effect.gen(function*() {
    const appexec = yield* Appexec.Appexec
    const app = yield* appexec.apps.import(echo)
    const principal = yield* TestHarness.signIn()
    return yield* Effect.forEach(
      Array.from({ length: n }, (_, i) => i),
      (i) => Effect.map(appexec.executions.start(principal, app.appId, { prompt: `p${i}` }), (s) => s.executionId)
    )
  })

/** The stored record of each execution. */
const recordsOf = (ids: ReadonlyArray<string>) =>
  Effect.flatMap(
    ExecutionStore.ExecutionStore,
    (store) => Effect.forEach(ids, (id) => Effect.map(store.get(Ids.ExecutionId.make(id)), Option.getOrThrow))
  )

/** `saves` written through the store's own `saveAll`, answered as `makeSaveAll`'s `write` answers: whether each was written. */
const written = (store: ExecutionStore.ExecutionStore["Type"], saves: ReadonlyArray<ExecutionStore.Save>) =>
  Effect.map(store.saveAll!(saves), (results) => results.map(Either.isRight))

/** The store with its saves counted: terminal ones through `save`, and the size of each `saveAll`. */
const counted = (
  store: ExecutionStore.ExecutionStore["Type"],
  counts: { terminalSaves: number; saveAlls: Array<number> },
  keepSaveAll: boolean
): ExecutionStore.ExecutionStore["Type"] => {
  const save: ExecutionStore.ExecutionStore["Type"]["save"] = (record, lease, outbox) => {
    if (ExecutionLifecycle.isTerminal(record.status)) counts.terminalSaves += 1
    return store.save(record, lease, outbox)
  }
  const saveAll = ExecutionStore.makeSaveAll(save, (saves) => {
    counts.saveAlls.push(saves.length)
    return written(store, saves)
  })
  return keepSaveAll ? { ...store, save, saveAll } : { ...store, save }
}

/** Runs the worker on the counted store until the scope closes. */
const workerOn = (counts: { terminalSaves: number; saveAlls: Array<number> }, keepSaveAll: boolean) =>
  Effect.forkScoped(
    Worker.run.pipe(
      Effect.zipRight(Effect.never),
      Effect.provideServiceEffect(
        ExecutionStore.ExecutionStore,
        Effect.map(ExecutionStore.ExecutionStore, (store) => counted(store, counts, keepSaveAll))
      )
    )
  )

describe("the saves of the worker's runs", () => {
  it.scoped("the outcomes of a claim's runs that end in one turn are saved in one write, announced running then completed", () =>
    Effect.gen(function*() {
      const ids = yield* startEchoes(5)
      const events = yield* ExecutionEvents.ExecutionEvents
      const transitions = yield* events.subscribe
      const counts = { terminalSaves: 0, saveAlls: [] as Array<number> }
      yield* workerOn(counts, true)
      yield* TestClock.adjust(0)
      const records = yield* recordsOf(ids)
      expect(records.map((r) => [r.status, r.outputs[0]?.value])).toEqual(
        ids.map((_, i) => ["completed", `p${i}`])
      )
      expect(counts).toEqual({ terminalSaves: 0, saveAlls: [5] })
      const announced = yield* Queue.takeAll(transitions)
      for (const id of ids) {
        expect([...announced].filter((r) => r.executionId === id).map((r) => r.status)).toEqual([
          "running",
          "completed"
        ])
      }
      // One slot per execution: the claim takes them all at once.
    }).pipe(Effect.provide(TestHarness.layer({ worker: false, config: { workerConcurrency: 8 } }))))

  it.scoped("the outcomes of 600 runs that end in one turn are saved in one write, not in pieces", () =>
    Effect.gen(function*() {
      const ids = yield* startEchoes(600)
      const counts = { terminalSaves: 0, saveAlls: [] as Array<number> }
      yield* workerOn(counts, true)
      yield* TestClock.adjust(0)
      expect(new Set((yield* recordsOf(ids)).map((r) => r.status))).toEqual(new Set(["completed"]))
      expect(counts).toEqual({ terminalSaves: 0, saveAlls: [600] })
    }).pipe(Effect.provide(TestHarness.layer({ worker: false, config: { workerConcurrency: 600 } }))))

  it.scoped("a stopping worker waits for the outcomes being saved together to be saved and announced", () =>
    Effect.gen(function*() {
      const ids = yield* startEchoes(2)
      const events = yield* ExecutionEvents.ExecutionEvents
      const transitions = yield* events.subscribe
      const gate = yield* Deferred.make<void>()
      const scope = yield* Scope.make()
      yield* Worker.run.pipe(
        Effect.provideServiceEffect(
          ExecutionStore.ExecutionStore,
          Effect.map(ExecutionStore.ExecutionStore, (store) => ({
            ...store,
            saveAll: ExecutionStore.makeSaveAll(
              store.save,
              (saves) => Effect.zipRight(Deferred.await(gate), written(store, saves))
            )
          }))
        ),
        Scope.extend(scope)
      )
      yield* TestClock.adjust(0)
      // Each run's start waits with its end for the write (one write, queued to completed).
      expect((yield* recordsOf(ids)).map((r) => r.status)).toEqual(["queued", "queued"])
      const stopping = yield* Effect.fork(Scope.close(scope, Exit.void))
      yield* TestClock.adjust(0)
      expect(Option.isNone(yield* Fiber.poll(stopping))).toBe(true)
      yield* Deferred.succeed(gate, undefined)
      yield* Fiber.join(stopping)
      expect((yield* recordsOf(ids)).map((r) => r.status)).toEqual(["completed", "completed"])
      const announced = [...(yield* Queue.takeAll(transitions))].filter((r) => r.status === "completed")
      expect(announced.map((r) => r.executionId).sort()).toEqual([...ids].sort())
    }).pipe(Effect.provide(TestHarness.layer({ worker: false }))))

  it.scoped("a store whose save is replaced has each outcome saved through that save", () =>
    Effect.gen(function*() {
      const ids = yield* startEchoes(3)
      const counts = { terminalSaves: 0, saveAlls: [] as Array<number> }
      yield* workerOn(counts, false)
      yield* TestClock.adjust(0)
      expect((yield* recordsOf(ids)).map((r) => r.status)).toEqual(["completed", "completed", "completed"])
      expect(counts).toEqual({ terminalSaves: 3, saveAlls: [] })
    }).pipe(Effect.provide(TestHarness.layer({ worker: false }))))

  it.scoped("a chain whose node answers later runs in the run's fiber: each node's run is called once", () => {
    const later = TestApps.later("1 second")
    return Effect.gen(function*() {
      const appexec = yield* Appexec.Appexec
      const app = yield* appexec.apps.import(TestApps.laterApp)
      const principal = yield* TestHarness.signIn()
      const started = yield* Effect.forEach(
        ["a", "b", "c"],
        (prompt) => appexec.executions.start(principal, app.appId, { prompt })
      )
      const waits = yield* Effect.forEach(started, (s) => Effect.fork(appexec.executions.await(s.executionId)))
      yield* TestClock.adjust("1 second")
      const done = yield* Effect.forEach(waits, Fiber.join)
      expect(done.map((d) => [d.status, d.outputs[0]?.value])).toEqual([
        ["completed", "echo: a"],
        ["completed", "echo: b"],
        ["completed", "echo: c"]
      ])
      expect(later.calls()).toBe(3)
    }).pipe(Effect.provide(TestHarness.layer({ nodes: [later.node] })))
  })

  it.scoped("a node that throws fails its execution once, and runs once", () => {
    const throwing = TestApps.throwing()
    return Effect.gen(function*() {
      const appexec = yield* Appexec.Appexec
      const app = yield* appexec.apps.import(TestApps.throwsApp)
      const principal = yield* TestHarness.signIn()
      const started = yield* appexec.executions.start(principal, app.appId, { prompt: "p" })
      const waiting = yield* Effect.fork(appexec.executions.await(started.executionId))
      yield* TestClock.adjust(0)
      const done = yield* Fiber.join(waiting)
      expect([done.status, done.errorMessage]).toEqual(["failed", "The execution failed unexpectedly."])
      expect(throwing.calls()).toBe(1)
    }).pipe(Effect.provide(TestHarness.layer({ nodes: [throwing.node], logLevel: LogLevel.None })))
  })

  it.scoped("at debug level, the end of a run saved with others is logged with its execution and attempt", () =>
    Effect.gen(function*() {
      const { layer: capture, lines } = LogCapture.make()
      yield* Effect.gen(function*() {
        const [id] = yield* startEchoes(1)
        const counts = { terminalSaves: 0, saveAlls: [] as Array<number> }
        yield* workerOn(counts, true)
        yield* TestClock.adjust(0)
        expect(counts.saveAlls).toEqual([1])
        const completed = lines.find((l) => String(l.message) === `execution ${id} completed`)
        expect(completed?.annotations).toMatchObject({ executionId: id, attempt: 1 })
      }).pipe(Effect.provide(TestHarness.layer({ worker: false, logLevel: LogLevel.Debug })), Effect.provide(capture))
    }))

  it.scoped("a run whose lease was lost at its save is not announced, is logged, and the next one runs", () =>
    Effect.gen(function*() {
      const { layer: capture, lines } = LogCapture.make()
      yield* Effect.gen(function*() {
        const ids = yield* startEchoes(2)
        const events = yield* ExecutionEvents.ExecutionEvents
        const transitions = yield* events.subscribe
        // The first save finds the first execution's lease lost.
        let lost = false
        yield* Effect.forkScoped(
          Worker.run.pipe(
            Effect.zipRight(Effect.never),
            Effect.provideServiceEffect(
              ExecutionStore.ExecutionStore,
              Effect.map(ExecutionStore.ExecutionStore, (store) => ({
                ...store,
                saveAll: ExecutionStore.makeSaveAll(store.save, (saves) => {
                  const first = lost ? [] : [false]
                  lost = true
                  return Effect.map(written(store, saves.slice(first.length)), (rest) => [...first, ...rest])
                })
              }))
            )
          )
        )
        yield* TestClock.adjust(0)
        const [first, second] = yield* recordsOf(ids)
        // Its start and its end were one write, refused: nothing of that run is stored or announced.
        expect(first!.status).toBe("queued")
        expect(second!.status).toBe("completed")
        const announced = yield* Queue.takeAll(transitions)
        expect([...announced].filter((r) => r.executionId === ids[0]).map((r) => r.status)).toEqual([])
        const warning = lines.find((l) => String(l.message).startsWith(`execution ${ids[0]}: lease lost`))
        expect(warning?.annotations).toMatchObject({ executionId: ids[0], attempt: 1 })
      }).pipe(
        Effect.provide(TestHarness.layer({ worker: false, config: { workerConcurrency: 1 } })),
        Effect.provide(capture)
      )
    }))
})
