import { Ids } from "@appexec/api"
import {
  Appexec,
  AppexecLayer,
  Errors,
  ExecutionLifecycle,
  ExecutionQueue,
  ExecutionStore,
  NodeType,
  WebhookOutbox
} from "@appexec/core"
import { MemoryStorage, SeededIds, TestHarness, TestOutboundHttp } from "@appexec/testing"
import { describe, expect, it } from "@effect/vitest"
import { type Duration, Effect, Exit, Fiber, Layer, Logger, LogLevel, Option, Schema, Scope, TestClock } from "effect"
import * as Worker from "../src/internal/engine/Worker.js"
import * as LogCapture from "./fixtures/LogCapture.js"

/** input → template → delay(ms) → text output */
const delayed = (ms: number, extra: { timeoutSeconds?: number } = {}) => ({
  name: `Delay ${ms}`,
  description: "Waits, then echoes",
  public: true,
  ...extra,
  nodes: [
    { id: "prompt", type: "input.text", label: "Prompt", config: { name: "prompt", required: true } },
    { id: "echo", type: "text.template", label: "Echo", config: { template: "echo: {{prompt}}" } },
    { id: "wait", type: "util.delay", label: "Wait", config: { ms } },
    { id: "result", type: "output.text", label: "Result" }
  ],
  edges: [
    { source: "prompt", target: "echo" },
    { source: "echo", target: "wait" },
    { source: "wait", target: "result" }
  ]
})

/** Two independent 1 s branches into two outputs. */
const branches = {
  name: "Branches",
  public: true,
  nodes: [
    { id: "a", type: "util.delay", config: { ms: 1000 } },
    { id: "b", type: "util.delay", config: { ms: 1000 } },
    { id: "outA", type: "output.text", label: "A" },
    { id: "outB", type: "output.text", label: "B" }
  ],
  edges: [
    { source: "a", target: "outA" },
    { source: "b", target: "outB" }
  ]
}

const startApp = (definition: unknown, inputs: Record<string, string> = { prompt: "hi" }, webhook?: string) =>
  Effect.gen(function*() {
    const appexec = yield* Appexec.Appexec
    const app = yield* appexec.apps.import(definition)
    const principal = yield* TestHarness.signIn()
    return yield* appexec.executions.start(principal, app.appId, inputs, webhook === undefined ? {} : { webhook })
  })

const awaitAfter = (executionId: string, advance: Duration.DurationInput) =>
  Effect.gen(function*() {
    const appexec = yield* Appexec.Appexec
    const waiting = yield* Effect.fork(appexec.executions.await(executionId))
    yield* TestClock.adjust(advance)
    return yield* Fiber.join(waiting)
  })

const statusOf = (executionId: string) =>
  Effect.gen(function*() {
    const store = yield* ExecutionStore.ExecutionStore
    const record = yield* store.get(Ids.ExecutionId.make(executionId))
    return Option.getOrThrow(record).status
  })

describe("engine", () => {
  it.scoped("runs an app end to end: queued → running → completed with outputs filled", () =>
    Effect.gen(function*() {
      const started = yield* startApp(delayed(0))
      expect(started.status).toBe("queued")
      expect(started.webhookUrl).toBeNull()
      expect(started.outputs).toEqual([
        { id: "result", label: "Result", type: "pending", value: null, status: "pending", error: null }
      ])
      const done = yield* awaitAfter(started.executionId, 0)
      expect(done.status).toBe("completed")
      expect(done.outputs).toEqual([
        { id: "result", label: "Result", type: "text", value: "echo: hi", status: "completed", error: null }
      ])
      expect(done.startedAt).not.toBeNull()
      expect(done.completedAt!.getTime()).toBeGreaterThanOrEqual(done.startedAt!.getTime())
      expect(done.errorMessage).toBeNull()
    }).pipe(Effect.provide(TestHarness.layer())))

  it.scoped("a run's log lines are annotated with its execution and attempt", () =>
    Effect.gen(function*() {
      const { layer: capture, lines } = LogCapture.make()
      yield* Effect.gen(function*() {
        const started = yield* startApp(delayed(0))
        yield* awaitAfter(started.executionId, 0)
        const completed = lines.find((l) => String(l.message) === `execution ${started.executionId} completed`)
        expect(completed?.annotations).toMatchObject({ executionId: started.executionId, attempt: 1 })
      }).pipe(Effect.provide(TestHarness.layer({ logLevel: LogLevel.Debug })), Effect.provide(capture))
    }))

  it.scoped("a 10-minute util.delay completes in virtual time, renewing its lease throughout", () =>
    Effect.gen(function*() {
      const started = yield* startApp(delayed(10 * 60_000, { timeoutSeconds: 3600 }))
      yield* TestClock.adjust("9 minutes")
      expect(yield* statusOf(started.executionId)).toBe("running")
      const done = yield* awaitAfter(started.executionId, "1 minute")
      expect(done.status).toBe("completed")
      expect(done.completedAt!.getTime() - done.startedAt!.getTime()).toBe(10 * 60_000)
    }).pipe(Effect.provide(TestHarness.layer({ config: { pollInterval: 60_000, cancelCheckInterval: 60_000 } }))))

  it.scoped(
    "a per-app timeout fails the execution with a clear message and per-output errors",
    () =>
      Effect.gen(function*() {
        const started = yield* startApp(delayed(5 * 60_000, { timeoutSeconds: 60 }))
        const done = yield* awaitAfter(started.executionId, "61 seconds")
        expect(done.status).toBe("failed")
        expect(done.errorMessage).toBe("The execution timed out after 1m.")
        expect(done.outputs[0]).toMatchObject({ type: "text", status: "failed", value: null, error: done.errorMessage })
      }).pipe(Effect.provide(TestHarness.layer())),
    30_000
  )

  it.scoped("a run with a nearer deadline times out on time beside one with a farther deadline", () =>
    Effect.gen(function*() {
      const far = yield* startApp(delayed(20 * 60_000, { timeoutSeconds: 600 }))
      yield* TestClock.adjust("1 second")
      const near = yield* startApp(delayed(5 * 60_000, { timeoutSeconds: 3 }))
      const done = yield* awaitAfter(near.executionId, "3 seconds")
      expect(done.status).toBe("failed")
      expect(done.errorMessage).toBe("The execution timed out after 3s.")
      expect(yield* statusOf(far.executionId)).toBe("running")
      const farDone = yield* awaitAfter(far.executionId, "10 minutes")
      expect(farDone.errorMessage).toBe("The execution timed out after 10m.")
    }).pipe(Effect.provide(TestHarness.layer({ config: { pollInterval: 60_000, cancelCheckInterval: 60_000 } }))))

  it.scoped("the instance default timeout applies to apps that set none", () =>
    Effect.gen(function*() {
      const started = yield* startApp(delayed(20 * 60_000))
      const done = yield* awaitAfter(started.executionId, "10 minutes")
      expect(done.status).toBe("failed")
      expect(done.errorMessage).toBe("The execution timed out after 10m.")
    }).pipe(Effect.provide(TestHarness.layer({ config: { pollInterval: 60_000, cancelCheckInterval: 60_000 } }))))

  it.scoped("independent branches run concurrently", () =>
    Effect.gen(function*() {
      const started = yield* startApp(branches, {})
      const done = yield* awaitAfter(started.executionId, "1 second")
      expect(done.status).toBe("completed")
      expect(done.completedAt!.getTime() - done.startedAt!.getTime()).toBe(1000)
    }).pipe(Effect.provide(TestHarness.layer())))

  it.scoped("the node concurrency bound holds", () =>
    Effect.gen(function*() {
      const started = yield* startApp(branches, {})
      yield* TestClock.adjust("1 second")
      expect(yield* statusOf(started.executionId)).toBe("running")
      const done = yield* awaitAfter(started.executionId, "1 second")
      expect(done.completedAt!.getTime() - done.startedAt!.getTime()).toBe(2000)
    }).pipe(Effect.provide(TestHarness.layer({ config: { nodeConcurrency: 1 } }))))

  it.scoped("a failing node fails the execution; outputs not depending on it are still produced", () =>
    Effect.gen(function*() {
      const started = yield* startApp(
        {
          name: "Half",
          public: true,
          nodes: [
            { id: "prompt", type: "input.text", config: { name: "prompt" } },
            { id: "text", type: "output.text", label: "Text" },
            { id: "json", type: "output.json", label: "Json" }
          ],
          edges: [
            { source: "prompt", target: "text" },
            { source: "prompt", target: "json" }
          ]
        },
        { prompt: "not json" }
      )
      const done = yield* awaitAfter(started.executionId, 0)
      expect(done.status).toBe("failed")
      expect(done.errorMessage).toBe("node \"Json\" ('json', output.json) failed: the upstream text is not valid JSON")
      expect(done.outputs).toEqual([
        { id: "text", label: "Text", type: "text", value: "not json", status: "completed", error: null },
        { id: "json", label: "Json", type: "json", value: null, status: "failed", error: done.errorMessage }
      ])
    }).pipe(Effect.provide(TestHarness.layer())))

  it.scoped("an expired lease (a lost worker) is recovered: the execution runs again and completes", () =>
    Effect.gen(function*() {
      const started = yield* startApp(delayed(1000))
      const queue = yield* ExecutionQueue.ExecutionQueue
      // A worker claims it and is lost: no renewal, no result.
      const lost = Option.getOrThrow(yield* ExecutionQueue.claimOne(queue, "lost-worker", 30_000))
      expect(lost.lease.attempt).toBe(1)
      yield* Effect.forkScoped(Worker.run.pipe(Effect.zipRight(Effect.never)))
      yield* TestClock.adjust("29 seconds")
      expect(yield* statusOf(started.executionId)).toBe("queued")
      const done = yield* awaitAfter(started.executionId, "3 seconds")
      expect(done.status).toBe("completed")
    }).pipe(Effect.provide(TestHarness.layer({ worker: false }))))

  it.scoped("after too many lost workers the execution fails with a clear errorMessage", () =>
    Effect.gen(function*() {
      const started = yield* startApp(delayed(1000))
      const queue = yield* ExecutionQueue.ExecutionQueue
      for (let i = 0; i < 2; i++) {
        expect(Option.isSome(yield* ExecutionQueue.claimOne(queue, `lost-${i}`, 30_000))).toBe(true)
        yield* TestClock.adjust("31 seconds")
      }
      yield* Effect.forkScoped(Worker.run.pipe(Effect.zipRight(Effect.never)))
      const done = yield* awaitAfter(started.executionId, "1 second")
      expect(done.status).toBe("failed")
      // The attempt the answer shows is the one the message names, beside the most that are run.
      expect(done.errorMessage).toBe(
        `The execution was abandoned at attempt ${done.attempt}: its worker stopped 2 times before finishing, and at most 2 attempts are run.`
      )
      expect(done.attempt).toBe(3)
      expect(done.outputs[0]!.status).toBe("failed")
    }).pipe(Effect.provide(TestHarness.layer({ worker: false, config: { maxAttempts: 2 } }))))

  it.scoped(
    "a worker shut down mid-run releases its lease: nothing stays stuck in running",
    () =>
      Effect.gen(function*() {
        const started = yield* startApp(delayed(60_000, { timeoutSeconds: 600 }))
        const first = yield* Scope.make()
        yield* Worker.run.pipe(Scope.extend(first))
        yield* TestClock.adjust("10 seconds")
        expect(yield* statusOf(started.executionId)).toBe("running")
        yield* Scope.close(first, Exit.void)
        // Released, not expired: a new worker takes it at once, long before the 30 s lease would end.
        const queue = yield* ExecutionQueue.ExecutionQueue
        const reclaimed = Option.getOrThrow(yield* ExecutionQueue.claimOne(queue, "next-worker", 30_000))
        expect(reclaimed.execution.executionId).toBe(started.executionId)
        // The next attempt, the released claim not counted.
        expect(reclaimed.lease).toMatchObject({ attempt: 2, counted: 1 })
        yield* queue.release(reclaimed.lease)
        yield* Effect.forkScoped(Worker.run.pipe(Effect.zipRight(Effect.never)))
        const done = yield* awaitAfter(started.executionId, "60 seconds")
        expect(done.status).toBe("completed")
        // 70 virtual seconds in 250 ms steps of the idle poll: seconds of real time on a busy machine.
      }).pipe(Effect.provide(TestHarness.layer({ worker: false, config: { drainTimeout: 0 } }))),
    30_000
  )

  it.scoped("a stopping worker drains running executions before it stops", () =>
    Effect.gen(function*() {
      const started = yield* startApp(delayed(5_000))
      const first = yield* Scope.make()
      yield* Worker.run.pipe(Scope.extend(first))
      yield* TestClock.adjust("1 second")
      const closing = yield* Effect.fork(Scope.close(first, Exit.void))
      yield* TestClock.adjust("4 seconds")
      yield* Fiber.join(closing)
      expect(yield* statusOf(started.executionId)).toBe("completed")
    }).pipe(Effect.provide(TestHarness.layer({ worker: false, config: { drainTimeout: 10_000 } }))))

  it.scoped("a stopping worker waits at most drainTimeoutMs, then releases what still runs", () =>
    Effect.gen(function*() {
      const started = yield* startApp(delayed(60_000, { timeoutSeconds: 600 }))
      const scope = yield* Scope.make()
      // Built as a layer, so that the drain runs in its (uninterruptible) finalizer.
      yield* Layer.buildWithScope(Worker.layer, scope)
      yield* TestClock.adjust("1 second")
      expect(yield* statusOf(started.executionId)).toBe("running")
      const closing = yield* Effect.fork(Scope.close(scope, Exit.void))
      yield* TestClock.adjust("10 seconds")
      expect(Option.isSome(yield* Fiber.poll(closing))).toBe(true)
      const queue = yield* ExecutionQueue.ExecutionQueue
      const reclaimed = Option.getOrThrow(yield* ExecutionQueue.claimOne(queue, "next-worker", 30_000))
      expect(reclaimed.execution.executionId).toBe(started.executionId)
      expect(reclaimed.lease).toMatchObject({ attempt: 2, counted: 1 })
    }).pipe(Effect.provide(TestHarness.layer({ worker: false, config: { drainTimeout: 10_000 } }))))

  it.scoped("a defect in the worker fails the execution with a generic message instead of leaving it running", () =>
    Effect.gen(function*() {
      const started = yield* startApp(delayed(0))
      const done = yield* awaitAfter(started.executionId, "1 second")
      expect(done.status).toBe("failed")
      expect(done.errorMessage).toBe("The execution failed unexpectedly.")
      expect(JSON.stringify(done)).not.toContain("disk on fire")
    }).pipe(
      Effect.provide(
        AppexecLayer.make().pipe(
          Layer.provideMerge(
            Layer.effect(
              ExecutionStore.ExecutionStore,
              Effect.map(ExecutionStore.ExecutionStore, (store) => {
                let broken = true
                return {
                  ...store,
                  save: (record, lease, outbox) => {
                    if (record.status === "completed" && broken) {
                      broken = false
                      return Effect.die(new Error("disk on fire"))
                    }
                    return store.save(record, lease, outbox)
                  }
                }
              })
            ).pipe(Layer.provideMerge(MemoryStorage.layer))
          ),
          Layer.provideMerge(SeededIds.layer()),
          Layer.provide(TestOutboundHttp.layer),
          Layer.provide(Logger.minimumLogLevel(LogLevel.None))
        )
      )
    ))

  it.scoped("a worker that can no longer renew its lease stops the run when the lease runs out: never two copies at once", () => {
    let running = 0
    let mostAtOnce = 0
    let runs = 0
    const slow = NodeType.defineNode({
      type: "test.slow",
      description: "Counts how many copies run at once",
      role: "process",
      inputs: { min: 0, max: 1 },
      config: Schema.Struct({}),
      run: () =>
        Effect.acquireUseRelease(
          Effect.sync(() => {
            runs++
            mostAtOnce = Math.max(mostAtOnce, ++running)
          }),
          () => Effect.sleep("60 seconds").pipe(Effect.as(NodeType.NodeValue.text("done"))),
          () => Effect.sync(() => void running--)
        )
    })
    return Effect.gen(function*() {
      yield* startApp(
        {
          name: "Slow",
          public: true,
          nodes: [
            { id: "slow", type: "test.slow" },
            { id: "out", type: "output.text", label: "Out" }
          ],
          edges: [{ source: "slow", target: "out" }]
        },
        {}
      )
      const storageDown = Effect.map(ExecutionQueue.ExecutionQueue, (queue) => ({
        ...queue,
        renewAll: () => Effect.fail(new Errors.StorageError({ operation: "renew leases", cause: "disk unavailable" }))
      }))
      yield* Effect.forkScoped(
        Worker.run.pipe(
          Effect.zipRight(Effect.never),
          Effect.provideServiceEffect(ExecutionQueue.ExecutionQueue, storageDown)
        )
      )
      yield* TestClock.adjust("45 seconds")
      expect(runs).toBe(2)
      expect(mostAtOnce).toBe(1)
    }).pipe(Effect.provide(TestHarness.layer({ worker: false, nodes: [slow], config: { pollInterval: 1000 } })))
  })

  it.scoped("a lease found lost at renewal interrupts the run at once, and the stopped run writes nothing", () => {
    let running = 0
    let interrupted = 0
    const slow = NodeType.defineNode({
      type: "test.slow",
      description: "Waits a minute, counting interruptions",
      role: "process",
      inputs: { min: 0, max: 1 },
      config: Schema.Struct({}),
      run: () =>
        Effect.sync(() => void running++).pipe(
          Effect.zipRight(Effect.sleep("60 seconds")),
          Effect.onInterrupt(() => Effect.sync(() => void interrupted++)),
          Effect.ensuring(Effect.sync(() => void running--)),
          Effect.as(NodeType.NodeValue.text("done"))
        )
    })
    return Effect.gen(function*() {
      const started = yield* startApp(
        {
          name: "Slow",
          public: true,
          nodes: [
            { id: "slow", type: "test.slow" },
            { id: "out", type: "output.text", label: "Out" }
          ],
          edges: [{ source: "slow", target: "out" }]
        },
        {}
      )
      // Another worker took the execution over: the store renews none of this worker's leases.
      const takenOver = Effect.map(ExecutionQueue.ExecutionQueue, (queue) => ({
        ...queue,
        renewAll: () => Effect.succeed([])
      }))
      yield* Effect.forkScoped(
        Worker.run.pipe(
          Effect.zipRight(Effect.never),
          Effect.provideServiceEffect(ExecutionQueue.ExecutionQueue, takenOver)
        )
      )
      yield* TestClock.adjust("9 seconds")
      expect(running).toBe(1)
      // The first renewal (every 10 s) finds the lease lost.
      yield* TestClock.adjust("1 second")
      expect(interrupted).toBe(1)
      expect(running).toBe(0)
      expect(yield* statusOf(started.executionId)).toBe("running")
    }).pipe(Effect.provide(TestHarness.layer({ worker: false, nodes: [slow], config: { pollInterval: 60_000 } })))
  })

  describe("once the workflow has ended, its outcome is written whatever comes", () => {
    /** input → output: the workflow ends at once. */
    const instant = (extra: { timeoutSeconds?: number } = {}) => ({
      name: "Instant",
      public: true,
      ...extra,
      nodes: [
        { id: "prompt", type: "input.text", label: "Prompt", config: { name: "prompt", required: true } },
        { id: "result", type: "output.text", label: "Result" }
      ],
      edges: [{ source: "prompt", target: "result" }]
    })
    /**
     * A store whose terminal saves take 2 s (a slow disk, a long group commit). The run's start is
     * written with its end, in that one write: until it is done the execution is stored queued.
     */
    const slowOutcomes = Layer.effect(
      ExecutionStore.ExecutionStore,
      Effect.map(ExecutionStore.ExecutionStore, (store) => ({
        ...store,
        save: (
          record: Parameters<typeof store.save>[0],
          lease: Parameters<typeof store.save>[1],
          outbox?: Parameters<typeof store.save>[2]
        ) =>
          ExecutionLifecycle.isTerminal(record.status)
            ? Effect.zipRight(Effect.sleep("2 seconds"), store.save(record, lease, outbox))
            : store.save(record, lease, outbox)
      }))
    )
    const outputOf = (executionId: string) =>
      Effect.gen(function*() {
        const store = yield* ExecutionStore.ExecutionStore
        const record = Option.getOrThrow(yield* store.get(Ids.ExecutionId.make(executionId)))
        return { status: record.status, value: record.outputs[0]?.value, errorMessage: record.errorMessage }
      })

    it.scoped("a cancel that comes while the outcome is written leaves it completed", () =>
      Effect.gen(function*() {
        const started = yield* startApp(instant())
        yield* Effect.forkScoped(Worker.layer.pipe(Layer.provide(slowOutcomes), Layer.launch))
        yield* TestClock.adjust("1 second")
        expect(yield* statusOf(started.executionId)).toBe("queued")
        const appexec = yield* Appexec.Appexec
        yield* appexec.executions.cancel(started.executionId)
        yield* TestClock.adjust("1 second")
        expect(yield* outputOf(started.executionId)).toEqual({ status: "completed", value: "hi", errorMessage: null })
      }).pipe(Effect.provide(TestHarness.layer({ worker: false }))))

    it.scoped("a deadline that passes while the outcome is written leaves it completed", () =>
      Effect.gen(function*() {
        const started = yield* startApp(instant({ timeoutSeconds: 1 }))
        yield* Effect.forkScoped(Worker.layer.pipe(Layer.provide(slowOutcomes), Layer.launch))
        // The deadline (1 s) passes at 1 s; the outcome is written at 2 s.
        yield* TestClock.adjust("1500 millis")
        expect(yield* statusOf(started.executionId)).toBe("queued")
        yield* TestClock.adjust("1 second")
        expect(yield* outputOf(started.executionId)).toEqual({ status: "completed", value: "hi", errorMessage: null })
      }).pipe(Effect.provide(TestHarness.layer({ worker: false }))))

    it.scoped("a worker shut down while the outcome is written finishes the write before it stops", () =>
      Effect.gen(function*() {
        const started = yield* startApp(instant())
        const scope = yield* Scope.make()
        // Built as a layer, so that the shutdown runs in its (uninterruptible) finalizer; no drain.
        yield* Layer.buildWithScope(Worker.layer.pipe(Layer.provide(slowOutcomes)), scope)
        yield* TestClock.adjust("1 second")
        expect(yield* statusOf(started.executionId)).toBe("queued")
        const closing = yield* Effect.fork(Scope.close(scope, Exit.void))
        yield* TestClock.adjust("1 second")
        yield* Fiber.join(closing)
        expect(yield* outputOf(started.executionId)).toEqual({ status: "completed", value: "hi", errorMessage: null })
        // Its lease is not given back first: nothing is left to claim.
        const queue = yield* ExecutionQueue.ExecutionQueue
        expect(Option.isNone(yield* ExecutionQueue.claimOne(queue, "next-worker", 30_000))).toBe(true)
      }).pipe(Effect.provide(TestHarness.layer({ worker: false, config: { drainTimeout: 0 } }))))
  })

  it.scoped("a stopped worker takes no new work", () =>
    Effect.gen(function*() {
      const first = yield* Scope.make()
      yield* Worker.run.pipe(Scope.extend(first))
      yield* Scope.close(first, Exit.void)
      const started = yield* startApp(delayed(0))
      yield* TestClock.adjust("5 seconds")
      expect(yield* statusOf(started.executionId)).toBe("queued")
    }).pipe(Effect.provide(TestHarness.layer({ worker: false }))))

  it.scoped("a finished execution with a webhook has its delivery in the outbox, on completed and on failed", () =>
    Effect.gen(function*() {
      const ok = yield* startApp(delayed(0), { prompt: "x" }, "https://hooks.example/done")
      expect(ok.webhookUrl).toBe("https://hooks.example/done")
      const slow = yield* startApp(
        delayed(120_000, { timeoutSeconds: 1 }),
        { prompt: "x" },
        "https://hooks.example/failed"
      )
      yield* awaitAfter(slow.executionId, "2 seconds")
      const outbox = yield* WebhookOutbox.WebhookOutbox
      const [delivered] = yield* outbox.forExecution(ok.executionId)
      expect(delivered).toMatchObject({ url: "https://hooks.example/done", status: "pending", attempts: [] })
      const [failed] = yield* outbox.forExecution(slow.executionId)
      expect(failed).toMatchObject({ url: "https://hooks.example/failed", status: "pending" })
      const principal = yield* TestHarness.signIn()
      expect(failed!.userId).toBe(principal.userId)
    }).pipe(Effect.provide(TestHarness.layer({ webhooks: false }))))
})
