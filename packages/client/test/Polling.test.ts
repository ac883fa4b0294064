import { Execution } from "@appexec/api"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Fiber, Ref, Schema, TestClock } from "effect"
import { Polling } from "../src/index.js"

/** An execution as the wire carries it, in `status`. */
const at = (status: Execution.ExecutionStatus) =>
  Schema.decodeSync(Execution.Execution)({
    executionId: "6f1c1d7e-2b1a-4c3e-9a55-1f2e3d4c5b6a",
    workflowId: "0b7a4c2e-8f3d-4e1a-a2b3-c4d5e6f70819",
    status,
    outputs: [],
    errorMessage: null,
    startedAt: null,
    completedAt: null,
    createdAt: "2026-11-22T10:00:00.000Z"
  })

describe("Polling", () => {
  it.effect("draws every wait from 3 to 5 seconds by default", () =>
    Effect.gen(function*() {
      const delays = yield* Effect.replicateEffect(Polling.nextDelay(), 200)
      expect(Math.min(...delays)).toBeGreaterThanOrEqual(3_000)
      expect(Math.max(...delays)).toBeLessThanOrEqual(5_000)
      expect(new Set(delays).size).toBeGreaterThan(10)
    }))

  it.effect("reads at once, then never sooner than 3 s after the previous read, until a terminal status", () =>
    Effect.gen(function*() {
      const reads = yield* Ref.make(0)
      const statuses: Array<Execution.ExecutionStatus> = ["queued", "running", "running", "failed"]
      const read = Ref.getAndUpdate(reads, (n) => n + 1).pipe(
        Effect.map((n) => ({ execution: at(statuses[n]!), held: false }))
      )
      const fiber = yield* Effect.fork(Polling.waitFor("e", read))
      yield* TestClock.adjust("2999 millis")
      expect(yield* Ref.get(reads)).toBe(1)
      yield* TestClock.adjust("2001 millis")
      expect(yield* Ref.get(reads)).toBe(2)
      yield* TestClock.adjust("10 seconds")
      expect((yield* Fiber.join(fiber)).status).toBe("failed")
      expect(yield* Ref.get(reads)).toBe(4)
    }))
  it.effect("after a read the server held, reads again at once", () =>
    Effect.gen(function*() {
      const reads = yield* Ref.make(0)
      const statuses: Array<Execution.ExecutionStatus> = ["running", "running", "completed"]
      const read = Ref.getAndUpdate(reads, (n) => n + 1).pipe(
        Effect.map((n) => ({ execution: at(statuses[n]!), held: true }))
      )
      const done = yield* Polling.waitFor("e", read)
      expect(done.status).toBe("completed")
      expect(yield* Ref.get(reads)).toBe(3)
    }))
})
