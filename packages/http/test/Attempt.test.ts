/**
 * The `attempt` extension over a real socket (docs/api.md#attempt): the poll answer tells how many
 * workers have taken the execution up, 0 while none has, 2 once a worker took it over after the
 * first one was lost; the spec's fields stay as they are (`queuePosition` follows while queued:
 * QueuePosition.test.ts).
 */
import { Api } from "@appexec/api"
import { ExecutionLifecycle, ExecutionQueue, ExecutionStore } from "@appexec/core"
import { TestHarness } from "@appexec/testing"
import { HttpClientRequest } from "@effect/platform"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Either, Layer, Schema, TestClock } from "effect"
import { clientLayer, get, seed, send, serverLayer, SigningKeysTest } from "./fixtures.js"

const LEASE = 30_000

/** The test stack with no worker of its own: the test claims as the workers would. */
const withoutWorker = clientLayer.pipe(
  Layer.provideMerge(serverLayer()),
  Layer.provideMerge(SigningKeysTest),
  Layer.provideMerge(TestHarness.layer({ worker: false }))
)

type Polled = { readonly data: Record<string, unknown> }

describe("attempt", () => {
  it.scoped("the poll answer carries attempt: 0 while queued, 1 once claimed, 2 after a takeover", () =>
    Effect.gen(function*() {
      const { alice, echo } = yield* seed
      const queue = yield* ExecutionQueue.ExecutionQueue
      const started = yield* send(
        HttpClientRequest.post(`/v1/apps/${echo.appId}/executions`).pipe(
          HttpClientRequest.setHeader("x-api-key", alice.key),
          HttpClientRequest.bodyText(JSON.stringify({ inputs: { prompt: "hi" } }), "application/json")
        )
      )
      expect(started.status).toBe(202)
      // The start answer is the spec's: no attempt.
      expect((started.body as Polled).data).not.toHaveProperty("attempt")
      const id = String((started.body as Polled).data.executionId)
      const poll = Effect.map(get(`/v1/executions/${id}`, alice.key), (res) => {
        expect(res.status).toBe(200)
        // Every spec field is there as before, and the answer decodes with the shared schema.
        Schema.decodeUnknownSync(Api.getExecution.successSchema)(res.body)
        return { data: (res.body as Polled).data, etag: res.headers["etag"] }
      })

      const queued = yield* poll
      expect(queued.data).toMatchObject({ status: "queued", startedAt: null, completedAt: null, attempt: 0 })
      expect(Object.keys(queued.data)).toEqual([
        "executionId",
        "workflowId",
        "appId",
        "status",
        "outputs",
        "inputs",
        "errorMessage",
        "startedAt",
        "completedAt",
        "createdAt",
        "attempt",
        "queuePosition"
      ])

      // The run saves its start, as a worker's does.
      const [claim] = yield* queue.claimBatch("lost-worker", LEASE, { limit: 1 })
      const store = yield* ExecutionStore.ExecutionStore
      yield* store.save(
        Either.getOrThrow(ExecutionLifecycle.transition(claim!.execution, { _tag: "Started", at: 0 })),
        claim!.lease
      )
      const first = yield* poll
      expect(first.data).toMatchObject({ status: "running", attempt: 1 })
      expect(first.data).not.toHaveProperty("queuePosition")

      // The first worker is lost; its lease runs out and another worker takes the execution over.
      yield* TestClock.adjust(LEASE)
      const [takeover] = yield* queue.claimBatch("next-worker", LEASE, { limit: 1 })
      expect(takeover?.lease.attempt).toBe(2)
      const second = yield* poll
      expect(second.data).toMatchObject({ status: "running", attempt: 2 })
      expect(second.etag).not.toBe(first.etag)
    }).pipe(Effect.provide(withoutWorker)))
})
