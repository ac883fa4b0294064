/**
 * The `queuePosition` extension over a real socket (docs/api.md#queue-position): while an
 * execution is queued, its poll answer says how many executions of its workspace are ahead of it;
 * other workspaces' executions do not count, and the field is gone once it runs.
 */
import { ExecutionLifecycle, ExecutionQueue, ExecutionStore } from "@appexec/core"
import { TestHarness } from "@appexec/testing"
import { HttpClientRequest } from "@effect/platform"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Either, Layer } from "effect"
import { clientLayer, get, seed, send, serverLayer, SigningKeysTest } from "./fixtures.js"

/** The test stack with no worker of its own: the test claims as a worker would. */
const withoutWorker = clientLayer.pipe(
  Layer.provideMerge(serverLayer()),
  Layer.provideMerge(SigningKeysTest),
  Layer.provideMerge(TestHarness.layer({ worker: false }))
)

type Polled = { readonly data: Record<string, unknown> }

const start = (appId: string, key: string) =>
  Effect.map(
    send(
      HttpClientRequest.post(`/v1/apps/${appId}/executions`).pipe(
        HttpClientRequest.setHeader("x-api-key", key),
        HttpClientRequest.bodyText(JSON.stringify({ inputs: { prompt: "hi" } }), "application/json")
      )
    ),
    (res) => String((res.body as Polled).data.executionId)
  )

const polled = (executionId: string, key: string) =>
  Effect.map(get(`/v1/executions/${executionId}`, key), (res) => (res.body as Polled).data)

describe("queuePosition", () => {
  it.scoped("counts the workspace's queued executions ahead, and is gone once the execution runs", () =>
    Effect.gen(function*() {
      const { alice, bob, echo } = yield* seed
      const queue = yield* ExecutionQueue.ExecutionQueue
      const first = yield* start(echo.appId, alice.key)
      const theirs = yield* start(echo.appId, bob.key)
      const second = yield* start(echo.appId, alice.key)
      const third = yield* start(echo.appId, alice.key)
      expect((yield* polled(first, alice.key)).queuePosition).toBe(0)
      expect((yield* polled(second, alice.key)).queuePosition).toBe(1)
      expect((yield* polled(third, alice.key)).queuePosition).toBe(2)
      // Another workspace's execution is not ahead of any of alice's.
      expect((yield* polled(theirs, bob.key)).queuePosition).toBe(0)

      const claimed = yield* queue.claimBatch("worker", 30_000, { limit: 4 })
      expect(claimed.length).toBe(4)
      // Each run saves its start, as a worker's does.
      const store = yield* ExecutionStore.ExecutionStore
      for (const { execution, lease } of claimed) {
        yield* store.save(
          Either.getOrThrow(ExecutionLifecycle.transition(execution, { _tag: "Started", at: 0 })),
          lease
        )
      }
      for (const [id, key] of [[first, alice.key], [second, alice.key], [third, alice.key], [theirs, bob.key]]) {
        const running = yield* polled(id!, key!)
        expect(running.status).toBe("running")
        expect(running).not.toHaveProperty("queuePosition")
      }
    }).pipe(Effect.provide(withoutWorker)))
})
