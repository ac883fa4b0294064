/**
 * Stopping is harmless (docs/operations.md#stopping): a run that its stopping worker does not see
 * end is handed back, runs again as the next attempt and is not counted against `maxAttempts`; a
 * node that fails while the instance stops (its child process killed with the service) fails no
 * run; the drain says each second what it waits for and how long it has left, and a hurry ends it
 * at once.
 */
import { Ids } from "@appexec/api"
import { Appexec, ExecutionQueue, ExecutionStore, NodeType, Shutdown } from "@appexec/core"
import { TestHarness } from "@appexec/testing"
import { describe, expect, it } from "@effect/vitest"
import { Deferred, Effect, Exit, Fiber, FiberId, Layer, LogLevel, Option, Schema, Scope, TestClock } from "effect"
import * as Worker from "../src/internal/engine/Worker.js"
import * as LogCapture from "./fixtures/LogCapture.js"

/** input → delay(ms) → text output */
const slow = (ms: number) => ({
  name: "Slow",
  public: true,
  nodes: [
    { id: "prompt", type: "input.text", label: "Prompt", config: { name: "prompt", required: true } },
    { id: "wait", type: "util.delay", label: "Wait", config: { ms } },
    { id: "result", type: "output.text", label: "Result" }
  ],
  edges: [{ source: "prompt", target: "wait" }, { source: "wait", target: "result" }]
})

/**
 * A node that stands for a child process: its first run fails when `killed` completes (its child
 * killed with the service), later runs answer at once.
 */
const childNode = (killed: Deferred.Deferred<void>) => {
  let runs = 0
  return NodeType.defineNode({
    type: "test.child",
    description: "Runs a child process.",
    role: "process",
    inputs: { min: 1, max: 1 },
    config: Schema.Struct({}),
    run: ({ upstream }) =>
      Effect.suspend(() => {
        runs += 1
        return runs > 1
          ? Effect.succeed(upstream[0]!.value)
          : Effect.zipRight(
            Deferred.await(killed),
            Effect.fail(new NodeType.NodeFailure({ message: "the video could not be made: received signal 2" }))
          )
      })
  })
}

/** prompt → child → made; prompt → delay 2 s → waited: the child's output fails while the other still runs. */
const childApp = {
  name: "Child",
  public: true,
  nodes: [
    { id: "prompt", type: "input.text", label: "Prompt", config: { name: "prompt", required: true } },
    { id: "child", type: "test.child", label: "Child", config: {} },
    { id: "made", type: "output.text", label: "Made" },
    { id: "wait", type: "util.delay", label: "Wait", config: { ms: 2000 } },
    { id: "waited", type: "output.text", label: "Waited" }
  ],
  edges: [
    { source: "prompt", target: "child" },
    { source: "child", target: "made" },
    { source: "prompt", target: "wait" },
    { source: "wait", target: "waited" }
  ]
}

const start = (definition: unknown) =>
  Effect.gen(function*() {
    const appexec = yield* Appexec.Appexec
    const app = yield* appexec.apps.import(definition)
    const principal = yield* TestHarness.signIn()
    return (yield* appexec.executions.start(principal, app.appId, { prompt: "hi" })).executionId
  })

const recordOf = (executionId: string) =>
  Effect.gen(function*() {
    const store = yield* ExecutionStore.ExecutionStore
    return Option.getOrThrow(yield* store.get(Ids.ExecutionId.make(executionId)))
  })

/** A worker built as a layer in a scope of its own, so that its drain runs in its (uninterruptible) finalizer. */
const startWorker = Effect.gen(function*() {
  const scope = yield* Scope.make()
  yield* Layer.buildWithScope(Worker.layer, scope)
  return scope
})

const messages = (lines: ReadonlyArray<LogCapture.Line>) => lines.map((l) => String(l.message))

describe("stopping", () => {
  it.scoped(
    "a run the drain does not see end is handed back: it runs again as the next attempt, not counted against maxAttempts 1",
    () => {
      const { layer: capture, lines } = LogCapture.make()
      return Effect.gen(function*() {
        const appexec = yield* Appexec.Appexec
        const id = yield* start(slow(5000))
        const first = yield* startWorker
        yield* TestClock.adjust("1 second")
        expect((yield* recordOf(id)).status).toBe("running")
        yield* Scope.close(first, Exit.void)
        // Handed back: nobody holds it, and the claim that took it is not counted.
        const queue = yield* ExecutionQueue.ExecutionQueue
        const again = Option.getOrThrow(yield* ExecutionQueue.claimOne(queue, "next-worker", 30_000))
        expect(again.lease).toMatchObject({ attempt: 2, counted: 1 })
        yield* queue.release(again.lease)
        yield* Effect.forkScoped(Worker.run.pipe(Effect.zipRight(Effect.never)))
        const waiting = yield* Effect.fork(appexec.executions.await(id))
        yield* TestClock.adjust("6 seconds")
        // Two hand-backs, three claims: attempt 3, and only this one counted.
        expect(yield* Fiber.join(waiting)).toMatchObject({ status: "completed", attempt: 3, errorMessage: null })
        const rerun = lines.find((l) => String(l.message).includes("runs again after its worker handed it back"))
        expect(rerun?.level).toBe(LogLevel.Info)
        expect(messages(lines).some((m) => m.includes("reclaimed after lost lease"))).toBe(false)
      }).pipe(
        Effect.provide(
          TestHarness.layer({ worker: false, logLevel: LogLevel.Info, config: { drainTimeout: 0, maxAttempts: 1 } })
        ),
        Effect.provide(capture)
      )
    }
  )

  it.scoped("a node that fails while the worker stops fails no run: the run is handed back and completes later", () => {
    const { layer: capture, lines } = LogCapture.make()
    const killed = Deferred.unsafeMake<void>(FiberId.none)
    return Effect.gen(function*() {
      const appexec = yield* Appexec.Appexec
      const id = yield* start(childApp)
      const first = yield* startWorker
      yield* TestClock.adjust("500 millis")
      const closing = yield* Effect.fork(Scope.close(first, Exit.void))
      yield* TestClock.adjust("100 millis")
      // The stop kills the child: its node fails while the worker drains.
      yield* Deferred.succeed(killed, undefined)
      yield* TestClock.adjust("2 seconds")
      yield* Fiber.join(closing)
      const after = yield* recordOf(id)
      expect(after).toMatchObject({ status: "running", errorMessage: null })
      // The failed output was not shown either.
      expect(after.outputs.map((o) => o.status)).toEqual(["pending", "pending"])
      expect(messages(lines)).toContainEqual(
        `execution ${id}: failed while the worker stops (node "Child" ('child', test.child) failed: the video could not be made: received signal 2); handed back to run again`
      )
      yield* Effect.forkScoped(Worker.run.pipe(Effect.zipRight(Effect.never)))
      const waiting = yield* Effect.fork(appexec.executions.await(id))
      yield* TestClock.adjust("3 seconds")
      expect(yield* Fiber.join(waiting)).toMatchObject({ status: "completed", attempt: 2, errorMessage: null })
    }).pipe(
      Effect.provide(
        TestHarness.layer({
          worker: false,
          logLevel: LogLevel.Info,
          nodes: [childNode(killed)],
          config: { drainTimeout: "10 seconds" }
        })
      ),
      Effect.provide(capture)
    )
  })

  it.scoped("the drain says each second what it waits for and how long it has left", () => {
    const { layer: capture, lines } = LogCapture.make()
    return Effect.gen(function*() {
      const id = yield* start(slow(60_000))
      const worker = yield* startWorker
      yield* TestClock.adjust("1 second")
      const closing = yield* Effect.fork(Scope.close(worker, Exit.void))
      yield* TestClock.adjust("3 seconds")
      yield* Fiber.join(closing)
      const waited = (left: number) =>
        `worker stopping: waiting for 1 running execution: Slow (${id}); ${left} s left, then it is handed back to run again on the next start`
      const said = messages(lines).filter((m) => m.startsWith("worker stopping"))
      expect(said).toEqual([
        waited(3),
        waited(2),
        waited(1),
        "worker stopping after 3s: handing back 1 running execution to run again on the next start"
      ])
      expect((yield* recordOf(id)).status).toBe("running")
    }).pipe(
      Effect.provide(
        TestHarness.layer({ worker: false, logLevel: LogLevel.Info, config: { drainTimeout: "3 seconds" } })
      ),
      Effect.provide(capture)
    )
  })

  it.scoped("a stop that interrupts the fiber the instance is provided to (a stop signal) still drains", () => {
    const { layer: capture, lines } = LogCapture.make()
    return Effect.gen(function*() {
      const ids = yield* Deferred.make<string>()
      // As the command runs: the instance provided to a program that runs until interrupted.
      const program = Effect.gen(function*() {
        yield* Deferred.succeed(ids, yield* start(slow(60_000)))
        return yield* Effect.never
      }).pipe(
        Effect.provide(TestHarness.layer({ logLevel: LogLevel.Info, config: { drainTimeout: "2 seconds" } }))
      )
      const running = yield* Effect.fork(program)
      const id = yield* Deferred.await(ids)
      yield* TestClock.adjust("1 second")
      const stopping = yield* Effect.fork(Fiber.interrupt(running))
      yield* TestClock.adjust("1 second")
      // Still draining a second into its two.
      expect(Option.isNone(yield* Fiber.poll(stopping))).toBe(true)
      yield* TestClock.adjust("1 second")
      yield* Fiber.join(stopping)
      expect(messages(lines).filter((m) => m.startsWith("worker stopping"))).toEqual([
        `worker stopping: waiting for 1 running execution: Slow (${id}); 2 s left, then it is handed back to run again on the next start`,
        `worker stopping: waiting for 1 running execution: Slow (${id}); 1 s left, then it is handed back to run again on the next start`,
        "worker stopping after 2s: handing back 1 running execution to run again on the next start"
      ])
    }).pipe(Effect.provide(capture))
  })

  it.scoped("a hurry ends the drain at once: what runs is handed back, and readiness says draining", () =>
    Effect.gen(function*() {
      const appexec = yield* Appexec.Appexec
      const shutdown = yield* Shutdown.Shutdown
      const id = yield* start(slow(60_000))
      const worker = yield* startWorker
      yield* TestClock.adjust("1 second")
      const closing = yield* Effect.fork(Scope.close(worker, Exit.void))
      yield* TestClock.adjust("1 second")
      expect(Option.isNone(yield* Fiber.poll(closing))).toBe(true)
      expect(yield* appexec.operator.ready).toEqual(Option.some("draining"))
      shutdown.unsafeHurry()
      // No more virtual time: the drain of 60 s ends at the hurry.
      yield* Fiber.join(closing)
      const queue = yield* ExecutionQueue.ExecutionQueue
      const again = Option.getOrThrow(yield* ExecutionQueue.claimOne(queue, "next-worker", 30_000))
      expect(again.execution.executionId).toBe(id)
      expect(again.lease).toMatchObject({ attempt: 2, counted: 1 })
    }).pipe(Effect.provide(TestHarness.layer({ worker: false, config: { drainTimeout: "60 seconds" } }))))
})
