/**
 * Attempts are visible: a worker that takes over an execution whose worker was lost (its lease
 * ran out) runs it as attempt 2, says so at warn level, and every answer about the execution
 * (the poll, its JSON, the operator's list) carries the attempt.
 */
import { Appexec, ExecutionQueue, ExecutionStore, WebhookDispatcher } from "@appexec/core"
import { TestHarness } from "@appexec/testing"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Fiber, LogLevel, Option, TestClock } from "effect"
import * as Worker from "../src/internal/engine/Worker.js"
import * as LogCapture from "./fixtures/LogCapture.js"

/** input → delay(1 s) → text output */
const slow = {
  name: "Slow",
  public: true,
  nodes: [
    { id: "prompt", type: "input.text", label: "Prompt", config: { name: "prompt" } },
    { id: "wait", type: "util.delay", label: "Wait", config: { ms: 1000 } },
    { id: "result", type: "output.text", label: "Result" }
  ],
  edges: [{ source: "prompt", target: "wait" }, { source: "wait", target: "result" }]
}

const reclaimedLine = (executionId: string, attempt: number) =>
  `execution ${executionId} reclaimed after lost lease (attempt ${attempt})`

describe("attempts", () => {
  it.scoped("an execution reclaimed after a lost lease runs as attempt 2 and a warning says so", () => {
    const { layer: capture, lines } = LogCapture.make()
    return Effect.gen(function*() {
      const appexec = yield* Appexec.Appexec
      const queue = yield* ExecutionQueue.ExecutionQueue
      const store = yield* ExecutionStore.ExecutionStore
      const app = yield* appexec.apps.import(slow)
      const principal = yield* TestHarness.signIn()
      const started = yield* appexec.executions.start(principal, app.appId, { prompt: "hi" })
      const id = started.executionId
      expect((yield* appexec.executions.get(principal, id)).attempt).toBe(0)
      // A worker claims it and is lost: no renewal, no result.
      const lost = Option.getOrThrow(yield* ExecutionQueue.claimOne(queue, "lost-worker", 30_000))
      expect(lost.lease.attempt).toBe(1)
      expect((yield* appexec.executions.get(principal, id)).attempt).toBe(1)
      yield* Effect.forkScoped(Worker.run.pipe(Effect.zipRight(Effect.never)))
      yield* TestClock.adjust("29 seconds")
      expect(lines.some((l) => String(l.message).includes("reclaimed"))).toBe(false)
      const waiting = yield* Effect.fork(appexec.executions.await(id))
      yield* TestClock.adjust("3 seconds")
      const done = yield* Fiber.join(waiting)
      expect(done).toMatchObject({ status: "completed", attempt: 2 })
      const warning = lines.find((l) => String(l.message) === reclaimedLine(id, 2))
      expect(warning?.level).toBe(LogLevel.Warning)
      expect(warning?.annotations).toMatchObject({ executionId: id, attempt: 2 })
      // The poll (both of its forms) and the operator's list tell the attempt.
      expect((yield* appexec.executions.get(principal, id)).attempt).toBe(2)
      expect(JSON.parse(yield* appexec.executions.getJson(principal, id))).toMatchObject({ attempt: 2 })
      const [listed] = yield* appexec.operator.listExecutions({ limit: 1 })
      expect(listed?.attempt).toBe(2)
      // The webhook body is the same view.
      const view = Option.getOrThrow(yield* store.getView(id))
      expect(JSON.parse(WebhookDispatcher.bodyOfView(view))).toMatchObject({ data: { executionId: id, attempt: 2 } })
    }).pipe(Effect.provide(TestHarness.layer({ worker: false })), Effect.provide(capture))
  })

  it.scoped("a first run is attempt 1 and logs no takeover", () => {
    const { layer: capture, lines } = LogCapture.make()
    return Effect.gen(function*() {
      const appexec = yield* Appexec.Appexec
      const app = yield* appexec.apps.import(slow)
      const principal = yield* TestHarness.signIn()
      const started = yield* appexec.executions.start(principal, app.appId, { prompt: "hi" })
      const waiting = yield* Effect.fork(appexec.executions.await(started.executionId))
      yield* TestClock.adjust("1 second")
      expect(yield* Fiber.join(waiting)).toMatchObject({ status: "completed", attempt: 1 })
      expect(lines.some((l) => String(l.message).includes("reclaimed"))).toBe(false)
    }).pipe(Effect.provide(TestHarness.layer()), Effect.provide(capture))
  })
})
