import { Ids } from "@appexec/api"
import { Appexec, ExecutionEvents, ExecutionQueue, ExecutionStore } from "@appexec/core"
import { TestHarness } from "@appexec/testing"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Fiber, Option, TestClock } from "effect"

/** input → delay(ms) → text output */
const delayed = (ms: number) => ({
  name: `Delay ${ms}`,
  public: true,
  nodes: [
    { id: "prompt", type: "input.text", label: "Prompt", config: { name: "prompt", required: true } },
    { id: "wait", type: "util.delay", label: "Wait", config: { ms } },
    { id: "result", type: "output.text", label: "Result" }
  ],
  edges: [
    { source: "prompt", target: "wait" },
    { source: "wait", target: "result" }
  ]
})

const startIn = (workspace: string, definition: unknown, count: number) =>
  Effect.gen(function*() {
    const appexec = yield* Appexec.Appexec
    const app = yield* appexec.apps.import(definition)
    const principal = yield* TestHarness.signIn(workspace)
    return yield* Effect.forEach(
      Array.from({ length: count }, (_, i) => i),
      (i) => appexec.executions.start(principal, app.appId, { prompt: `${i}` })
    )
  })

const statuses = (executionIds: ReadonlyArray<string>) =>
  Effect.gen(function*() {
    const store = yield* ExecutionStore.ExecutionStore
    return yield* Effect.forEach(executionIds, (id) =>
      Effect.map(store.get(Ids.ExecutionId.make(id)), (r) => Option.getOrThrow(r).status))
  })

describe("fairness across workspaces", () => {
  it.scoped("A queues 40 one-second executions, then B's single execution completes within about one execution time", () =>
    Effect.gen(function*() {
      const appexec = yield* Appexec.Appexec
      const backlog = yield* startIn("a", delayed(1000), 40)
      yield* TestClock.adjust(0)
      const [single] = yield* startIn("b", delayed(50), 1)
      const waiting = yield* Effect.fork(appexec.executions.await(single!.executionId))
      // A's backlog takes 10 s on 4 slots; B waits for the first free slot only.
      yield* TestClock.adjust("1050 millis")
      const done = yield* Fiber.join(waiting)
      expect(done.status).toBe("completed")
      expect(done.completedAt!.getTime() - done.startedAt!.getTime()).toBe(50)
      expect(done.startedAt!.getTime()).toBe(1000)
      const a = yield* statuses(backlog.map((s) => s.executionId))
      expect(a.filter((s) => s === "completed").length).toBe(4)
      expect(a.filter((s) => s === "queued").length).toBeGreaterThanOrEqual(32)
    }).pipe(Effect.provide(TestHarness.layer())))

  it.scoped("with --max-running-per-workspace below the worker's slots, B starts at once beside A's backlog", () =>
    Effect.gen(function*() {
      const appexec = yield* Appexec.Appexec
      const backlog = yield* startIn("a", delayed(1000), 10)
      yield* TestClock.adjust(0)
      const a = yield* statuses(backlog.map((s) => s.executionId))
      expect(a.filter((s) => s === "running").length).toBe(3)
      const [single] = yield* startIn("b", delayed(50), 1)
      const waiting = yield* Effect.fork(appexec.executions.await(single!.executionId))
      yield* TestClock.adjust("50 millis")
      const done = yield* Fiber.join(waiting)
      expect(done.status).toBe("completed")
      expect(done.startedAt!.getTime()).toBe(0)
      // A never runs more than its cap, even with a slot free.
      yield* TestClock.adjust("1 second")
      const after = yield* statuses(backlog.map((s) => s.executionId))
      expect(after.filter((s) => s === "running").length).toBe(3)
      expect(after.filter((s) => s === "completed").length).toBe(3)
    }).pipe(Effect.provide(TestHarness.layer({ config: { maxRunningPerWorkspace: 3, workerConcurrency: 4 } }))))
})

describe("executions.await", () => {
  it.scoped("wakes the waiters of the execution that ended, not the others, and forgets interrupted waiters", () =>
    Effect.gen(function*() {
      const appexec = yield* Appexec.Appexec
      const events = yield* ExecutionEvents.ExecutionEvents
      const [short, long] = [(yield* startIn("a", delayed(100), 1))[0]!, (yield* startIn("a", delayed(5000), 1))[0]!]
      const shortWaiters = yield* Effect.forEach(
        [1, 2, 3],
        () => Effect.fork(appexec.executions.await(short.executionId))
      )
      const longWaiter = yield* Effect.fork(appexec.executions.await(long.executionId))
      yield* TestClock.adjust(0)
      expect([...(yield* events.waited)].sort()).toEqual([short.executionId, long.executionId].sort())
      yield* TestClock.adjust("100 millis")
      for (const waiter of shortWaiters) expect((yield* Fiber.join(waiter)).status).toBe("completed")
      expect(Option.isNone(yield* Fiber.poll(longWaiter))).toBe(true)
      expect(yield* events.waited).toEqual([long.executionId])
      yield* Fiber.interrupt(longWaiter)
      expect(yield* events.waited).toEqual([])
    }).pipe(Effect.provide(TestHarness.layer())))

  it.scoped("sees an execution finished by another process (no event here) within the poll interval", () =>
    Effect.gen(function*() {
      const appexec = yield* Appexec.Appexec
      const store = yield* ExecutionStore.ExecutionStore
      const queue = yield* ExecutionQueue.ExecutionQueue
      const [started] = yield* startIn("a", delayed(0), 1)
      const waiting = yield* Effect.fork(appexec.executions.await(started!.executionId))
      yield* TestClock.adjust(0)
      // Another process runs it: the store changes, no event is published in this one.
      const claim = Option.getOrThrow(yield* ExecutionQueue.claimOne(queue, "elsewhere", 30_000))
      const record = claim.execution
      yield* store.save({ ...record, status: "running", startedAt: 0 }, claim.lease)
      yield* store.save({
        ...record,
        status: "completed",
        startedAt: 0,
        completedAt: 1,
        outputs: record.outputs.map((o) => ({ ...o, type: "text", value: "x", status: "completed" }))
      }, claim.lease)
      yield* TestClock.adjust("999 millis")
      expect(Option.isNone(yield* Fiber.poll(waiting))).toBe(true)
      yield* TestClock.adjust("1 millis")
      expect((yield* Fiber.join(waiting)).status).toBe("completed")
    }).pipe(Effect.provide(TestHarness.layer({ worker: false }))))
})
