/**
 * A run that a stopping worker handed back keeps the status `running` under no lease: nobody runs
 * it, it waits to be claimed again. The limits count what a claim's caps count, the executions under
 * live leases (docs/scaling.md#limits), so such a run holds no limit back: not in the poll answer of
 * the execution queued behind it (`waitingFor`), nor in the operator's apps (`AppQueues`), which
 * count it as queued, as the metrics' database gauges do (`ExecutionStore.countOpen`).
 */
import { Appexec, AppexecMetrics, AppQueues, ExecutionLifecycle, ExecutionQueue, ExecutionStore } from "@appexec/core"
import { TestApps, TestHarness } from "@appexec/testing"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Either, Option, TestClock } from "effect"

const answerOf = (json: string) => JSON.parse(json) as { readonly status: string; readonly waitingFor?: string }

describe("a run handed back by a stopping worker", () => {
  it.scoped("holds no limit back: the execution behind it does not wait for it; the operator and the metrics see it queued", () =>
    Effect.gen(function*() {
      const appexec = yield* Appexec.Appexec
      const queue = yield* ExecutionQueue.ExecutionQueue
      const store = yield* ExecutionStore.ExecutionStore
      const apps = yield* AppQueues.make
      // No worker here: the runs are claimed by hand. One run of the app at a time.
      const app = yield* appexec.apps.import({ ...TestApps.echo, concurrency: 1 })
      const principal = yield* TestHarness.signIn()
      const start = (prompt: string) =>
        Effect.map(appexec.executions.start(principal, app.appId, { prompt }), (s) => s.executionId)
      const first = yield* start("first")
      const second = yield* start("second")

      // A worker of another process claims the first and starts it: the app's limit is reached.
      const claim = Option.getOrThrow(yield* ExecutionQueue.claimOne(queue, "elsewhere", 30_000))
      expect(claim.execution.executionId).toBe(first)
      const started = Either.getOrThrow(
        ExecutionLifecycle.transition(claim.execution, { _tag: "Started", at: yield* TestClock.currentTimeMillis })
      )
      yield* store.save(started, claim.lease)
      yield* TestClock.adjust("1 second")
      const limit = "the app's limit of 1 at once"
      expect(answerOf(yield* appexec.executions.getJson(principal, second))).toMatchObject({
        status: "queued",
        waitingFor: limit
      })
      expect(yield* apps).toEqual([
        expect.objectContaining({ appId: app.appId, queued: 1, running: 1, waitingFor: limit })
      ])
      const before = yield* AppexecMetrics.prometheus
      expect(before).toContain("appexec_queue_depth{scope=\"database\"} 1\n")
      expect(before).toContain("appexec_executions_running{scope=\"database\"} 1\n")

      // It stops and hands the first back: still `running`, but nothing runs and nothing holds the second.
      yield* queue.release(claim.lease)
      yield* TestClock.adjust("1 second")
      expect(answerOf(yield* appexec.executions.getJson(principal, first)).status).toBe("running")
      const behind = answerOf(yield* appexec.executions.getJson(principal, second))
      expect(behind.status).toBe("queued")
      expect(behind.waitingFor).toBeUndefined()
      expect(yield* apps).toEqual([
        expect.objectContaining({ appId: app.appId, queued: 2, running: 0, waitingFor: null })
      ])
      // The first waits again, since it was accepted 2 s ago.
      const after = yield* AppexecMetrics.prometheus
      expect(after).toContain("appexec_queue_depth{scope=\"database\"} 2\n")
      expect(after).toContain("appexec_executions_running{scope=\"database\"} 0\n")
      expect(after).toContain("appexec_queue_oldest_age_seconds{scope=\"database\"} 2\n")
    }).pipe(Effect.provide(TestHarness.layer({ worker: false }))))
})
