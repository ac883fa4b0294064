/**
 * Cancel in the engine: a queued execution no worker holds fails at once with its webhook; a
 * running one is interrupted where it runs, whether the cancel came through this process's facade
 * or through the store from another process (seen within `cancelCheckInterval`).
 */
import { Ids } from "@appexec/api"
import { Appexec, ExecutionStore, WebhookOutbox } from "@appexec/core"
import { TestHarness } from "@appexec/testing"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Fiber, Option, TestClock } from "effect"

/** input → delay(ms) → text output */
const slow = (ms: number) => ({
  name: `Slow ${ms}`,
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

const startSlow = (ms: number, webhook?: string) =>
  Effect.gen(function*() {
    const appexec = yield* Appexec.Appexec
    const app = yield* appexec.apps.import(slow(ms))
    const principal = yield* TestHarness.signIn()
    const started = yield* appexec.executions.start(principal, app.appId, { prompt: "hi" }, { webhook })
    return { principal, started }
  })

describe("cancel", () => {
  it.scoped("a queued execution fails at once, with its webhook, and no worker ever runs it", () =>
    Effect.gen(function*() {
      const appexec = yield* Appexec.Appexec
      const { principal, started } = yield* startSlow(1000, "https://hooks.example/done")
      const canceled = yield* appexec.executions.cancel(started.executionId, principal)
      expect(canceled.status).toBe("failed")
      expect(canceled.errorMessage).toBe("The execution was canceled.")
      expect(canceled.outputs).toEqual([
        {
          id: "result",
          label: "Result",
          type: "text",
          value: null,
          status: "failed",
          error: "The execution was canceled."
        }
      ])
      const outbox = yield* WebhookOutbox.WebhookOutbox
      expect(yield* outbox.forExecution(started.executionId)).toHaveLength(1)
      const again = yield* Effect.flip(appexec.executions.cancel(started.executionId, principal))
      expect(again).toMatchObject({ _tag: "ExecutionFinished", code: "execution_finished" })
    }).pipe(Effect.provide(TestHarness.layer({ worker: false }))))

  it.scoped("another workspace's execution is not found", () =>
    Effect.gen(function*() {
      const appexec = yield* Appexec.Appexec
      const { started } = yield* startSlow(1000)
      const stranger = yield* TestHarness.signIn("elsewhere")
      const error = yield* Effect.flip(appexec.executions.cancel(started.executionId, stranger))
      expect(error._tag).toBe("ExecutionNotFound")
      // An operator (no principal) may cancel any workspace's execution.
      expect((yield* appexec.executions.cancel(started.executionId)).status).toBe("failed")
    }).pipe(Effect.provide(TestHarness.layer({ worker: false }))))

  it.scoped("a cancel made through the store by another process interrupts the run within the check interval", () =>
    Effect.gen(function*() {
      const appexec = yield* Appexec.Appexec
      const store = yield* ExecutionStore.ExecutionStore
      const { started } = yield* startSlow(600_000)
      yield* TestClock.adjust("1 second")
      const id = Ids.ExecutionId.make(started.executionId)
      expect(Option.map(yield* store.get(id), (r) => r.status)).toEqual(Option.some("running"))
      // What `appexec executions cancel` in another process does: only the store learns of it.
      expect(yield* store.requestCancel(id, 1_000)).toBe(true)
      const waiting = yield* Effect.fork(appexec.executions.await(started.executionId))
      yield* TestClock.adjust("500 millis")
      const done = yield* Fiber.join(waiting)
      expect(done.status).toBe("failed")
      expect(done.errorMessage).toBe("The execution was canceled.")
      expect(done.completedAt!.getTime() - done.startedAt!.getTime()).toBeLessThanOrEqual(1_500)
    }).pipe(Effect.provide(TestHarness.layer())))
})
