import { Appexec, ExecutionQueue } from "@appexec/core"
import { TestApps, TestHarness } from "@appexec/testing"
import { describe, expect, it } from "@effect/vitest"
import { Effect, TestClock } from "effect"
import * as Worker from "../src/internal/engine/Worker.js"

/**
 * Starts 600 executions, then runs a worker of 600 slots whose queue records the `limit` of each
 * claim; answers the limits once every execution completed.
 */
const claimLimits = Effect.gen(function*() {
  const appexec = yield* Appexec.Appexec
  const app = yield* appexec.apps.import(TestApps.echo)
  const principal = yield* TestHarness.signIn()
  const ids = yield* Effect.forEach(
    Array.from({ length: 600 }, (_, i) => i),
    (i) => Effect.map(appexec.executions.start(principal, app.appId, { prompt: `${i}` }), (e) => e.executionId)
  )
  const limits: Array<number> = []
  const recording = Effect.map(ExecutionQueue.ExecutionQueue, (queue) => ({
    ...queue,
    claimBatch: (workerId: string, leaseMs: number, options: ExecutionQueue.ClaimOptions) => {
      limits.push(options.limit)
      return queue.claimBatch(workerId, leaseMs, options)
    }
  }))
  yield* Effect.forkScoped(
    Worker.run.pipe(
      Effect.zipRight(Effect.never),
      Effect.provideServiceEffect(ExecutionQueue.ExecutionQueue, recording)
    )
  )
  for (let i = 0; i < 100; i++) yield* TestClock.adjust("10 millis")
  const statuses = yield* Effect.forEach(ids, (id) => Effect.map(appexec.executions.await(id), (e) => e.status))
  expect(new Set(statuses)).toEqual(new Set(["completed"]))
  return limits
})

describe("the worker's claims", () => {
  it.scoped("take up to 1,024 executions each without caps", () =>
    Effect.gen(function*() {
      const limits = yield* claimLimits
      // 600 free slots: the first claim asks for all of them.
      expect(limits[0]).toBe(600)
    }).pipe(Effect.provide(TestHarness.layer({ worker: false, config: { workerConcurrency: 600 } }))))

  it.scoped("take up to 128 each under caps, where a claim takes its executions one by one under a lock", () =>
    Effect.gen(function*() {
      const limits = yield* claimLimits
      expect(limits.length).toBeGreaterThanOrEqual(5)
      expect(Math.max(...limits)).toBe(128)
    }).pipe(
      Effect.provide(
        TestHarness.layer({ worker: false, config: { workerConcurrency: 600, maxRunningPerWorkspace: 1_000 } })
      )
    ))
})
