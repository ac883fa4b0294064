/**
 * Long polling on change (docs/api.md#long-polling): a read with `wait` and `unchanged` (what an
 * `If-None-Match` says the caller holds) answers at the execution's first change, not only at its
 * end: at once for a transition made in this process, within the look interval for one made by
 * another process through the store.
 */
import { Ids } from "@appexec/api"
import { Appexec, ExecutionLifecycle, ExecutionQueue, ExecutionStore } from "@appexec/core"
import { TestHarness } from "@appexec/testing"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Either, Fiber, Option, TestClock } from "effect"

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

const statusOf = (json: string): unknown => (JSON.parse(json) as { readonly status: unknown }).status

const setup = (ms: number) =>
  Effect.gen(function*() {
    const appexec = yield* Appexec.Appexec
    const app = yield* appexec.apps.import(slow(ms))
    const principal = yield* TestHarness.signIn()
    const start = Effect.map(appexec.executions.start(principal, app.appId, { prompt: "hi" }), (s) => s.executionId)
    return { appexec, principal, start }
  })

describe("a long poll with a known answer (If-None-Match)", () => {
  it.scoped("answers when a worker of this process starts the execution, not when it ends", () =>
    Effect.gen(function*() {
      const { appexec, principal, start } = yield* setup(10_000)
      // One run at a time in the workspace: the second execution stays queued while the first runs.
      const first = yield* start
      const firstQueued = yield* appexec.executions.getJson(principal, first)
      if (statusOf(firstQueued) === "queued") {
        yield* appexec.executions.getJson(principal, first, { wait: "1 second", unchanged: (j) => j === firstQueued })
      }
      // Started after the first runs, so its queue position (nothing ahead of it) stays as it is.
      const second = yield* start
      // Past the second in which the running executions were last counted: the answer says the
      // workspace's cap holds it back, and stays as it is while the first runs.
      yield* TestClock.adjust("1 second")
      const queued = yield* appexec.executions.getJson(principal, second)
      expect(statusOf(queued)).toBe("queued")
      expect(JSON.parse(queued)).toMatchObject({ queuePosition: 0, waitingFor: "the workspace's limit of 1 at once" })
      const held = yield* Effect.fork(
        appexec.executions.getJson(principal, second, { wait: "60 seconds", unchanged: (json) => json === queued })
      )
      yield* TestClock.adjust("8 seconds")
      expect(Option.isNone(yield* Fiber.poll(held))).toBe(true)
      // The first ends at 10 s and the second starts then; it would end at 20 s.
      yield* TestClock.adjust("1 second")
      const answer = yield* Fiber.join(held)
      expect(statusOf(answer)).toBe("running")
    }).pipe(Effect.provide(TestHarness.layer({ config: { maxRunningPerWorkspace: 1 } }))))

  it.scoped("answers a change made by another process through the store within the look interval", () =>
    Effect.gen(function*() {
      const { appexec, principal, start } = yield* setup(10_000)
      const queue = yield* ExecutionQueue.ExecutionQueue
      const store = yield* ExecutionStore.ExecutionStore
      const id = yield* start
      const queued = yield* appexec.executions.getJson(principal, id)
      const held = yield* Effect.fork(
        appexec.executions.get(principal, id, { wait: "30 seconds", unchanged: (json) => json === queued })
      )
      // What a worker in another process does: claim and start it; only the store learns of it.
      const claim = Option.getOrThrow(yield* ExecutionQueue.claimOne(queue, "elsewhere", 30_000))
      expect(claim.execution.executionId).toBe(id)
      const started = Either.getOrThrow(
        ExecutionLifecycle.transition(claim.execution, { _tag: "Started", at: yield* TestClock.currentTimeMillis })
      )
      yield* store.save(started, claim.lease)
      expect(Option.isNone(yield* Fiber.poll(held))).toBe(true)
      yield* TestClock.adjust("1 second")
      const answer = yield* Fiber.join(held)
      expect(answer.status).toBe("running")
      expect(answer.executionId).toBe(Ids.ExecutionId.make(id))
    }).pipe(Effect.provide(TestHarness.layer({ worker: false }))))

  it.scoped("answers at once when the execution differs already or has finished; else as it is after the wait", () =>
    Effect.gen(function*() {
      const { appexec, principal, start } = yield* setup(10_000)
      const id = yield* start
      const now = yield* appexec.executions.getJson(principal, id)
      // Known as something else: answered at once.
      const differs = yield* appexec.executions.getJson(principal, id, { wait: "30 seconds", unchanged: () => false })
      expect(differs).toBe(now)
      // Unchanged for the whole wait: answered as it is, after the wait.
      const held = yield* Effect.fork(
        appexec.executions.getJson(principal, id, { wait: "5 seconds", unchanged: (json) => json === now })
      )
      yield* TestClock.adjust("4 seconds")
      expect(Option.isNone(yield* Fiber.poll(held))).toBe(true)
      yield* TestClock.adjust("1 second")
      expect(yield* Fiber.join(held)).toBe(now)
      // Finished: nothing more will change, so even the answer the caller holds comes at once.
      yield* appexec.executions.cancel(id, principal)
      const done = yield* appexec.executions.getJson(principal, id)
      expect(statusOf(done)).toBe("failed")
      expect(yield* appexec.executions.getJson(principal, id, { wait: "30 seconds", unchanged: () => true })).toBe(
        done
      )
      // Another workspace's execution is not found, as without a wait.
      const stranger = yield* TestHarness.signIn("elsewhere")
      const refused = yield* Effect.flip(
        appexec.executions.getJson(stranger, id, { wait: "30 seconds", unchanged: () => true })
      )
      expect(refused._tag).toBe("ExecutionNotFound")
    }).pipe(Effect.provide(TestHarness.layer({ worker: false }))))
})
