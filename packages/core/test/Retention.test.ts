/**
 * Retention in virtual time: finished executions, their webhook deliveries and their media are
 * deleted once `retention` has passed since they ended — by the periodic pass and on demand —
 * while newer and unfinished executions stay. And the operator's listing of executions.
 */
import { Ids } from "@appexec/api"
import { Appexec, BlobStore, ExecutionStore, WebhookOutbox } from "@appexec/core"
import { TestHarness } from "@appexec/testing"
import { describe, expect, it } from "@effect/vitest"
import { type Duration, Effect, Fiber, Option, TestClock } from "effect"

const echo = {
  name: "Echo",
  public: true,
  nodes: [
    { id: "prompt", type: "input.text", label: "Prompt", config: { name: "prompt", required: true } },
    { id: "result", type: "output.text", label: "Result" }
  ],
  edges: [{ source: "prompt", target: "result" }]
}

/** Runs one execution of `echo` with a webhook to its end, and stores a media blob under it. */
const runOne = (workspace = "test") =>
  Effect.gen(function*() {
    const appexec = yield* Appexec.Appexec
    const apps = yield* appexec.apps.listAll
    const appId = apps.length === 0 ? (yield* appexec.apps.import(echo)).appId : apps[0]!.appId
    const principal = yield* TestHarness.signIn(workspace)
    const started = yield* appexec.executions.start(principal, appId, { prompt: "hi" }, {
      webhook: "https://example.com/hook"
    })
    const waiting = yield* Effect.fork(appexec.executions.await(started.executionId))
    yield* TestClock.adjust(0)
    const done = yield* Fiber.join(waiting)
    expect(done.status).toBe("completed")
    const blobs = yield* BlobStore.BlobStore
    yield* blobs.put(`${BlobStore.executionPrefix(started.executionId)}abc-out.png`, {
      contentType: "image/png",
      bytes: Uint8Array.from([1])
    })
    return Ids.ExecutionId.make(started.executionId)
  })

/** Whether the execution, its deliveries and its media are still stored. */
const stored = (executionId: Ids.ExecutionId) =>
  Effect.gen(function*() {
    const store = yield* ExecutionStore.ExecutionStore
    const outbox = yield* WebhookOutbox.WebhookOutbox
    const blobs = yield* BlobStore.BlobStore
    return {
      execution: Option.isSome(yield* store.get(executionId)),
      deliveries: (yield* outbox.forExecution(executionId)).length,
      media: Option.isSome(yield* blobs.get(`${BlobStore.executionPrefix(executionId)}abc-out.png`))
    }
  })

const DAY = 24 * 60 * 60 * 1000
const harness = (retention: Duration.DurationInput = "30 days") =>
  TestHarness.layer({ config: { pollInterval: "1 day", retention, retentionInterval: "6 hours" } })

describe("retention", () => {
  it.scoped("deletes finished executions with their deliveries and media once the retention has passed", () =>
    Effect.gen(function*() {
      const first = yield* runOne()
      const second = yield* runOne()
      expect(yield* stored(first)).toEqual({ execution: true, deliveries: 1, media: true })
      yield* TestClock.adjust(29 * DAY)
      const later = yield* runOne()
      expect(yield* stored(first)).toEqual({ execution: true, deliveries: 1, media: true })
      // 30 days after they ended, the next pass (every 6 hours) deletes the first two, not the later one.
      yield* TestClock.adjust(DAY + 6 * 60 * 60 * 1000)
      expect(yield* stored(first)).toEqual({ execution: false, deliveries: 0, media: false })
      expect(yield* stored(second)).toEqual({ execution: false, deliveries: 0, media: false })
      expect(yield* stored(later)).toEqual({ execution: true, deliveries: 1, media: true })
      yield* TestClock.adjust(29 * DAY)
      expect(yield* stored(later)).toEqual({ execution: false, deliveries: 0, media: false })
    }).pipe(Effect.provide(harness())))

  it.scoped("prune deletes on demand what ended longer ago than asked", () =>
    Effect.gen(function*() {
      const appexec = yield* Appexec.Appexec
      const old = yield* runOne()
      yield* TestClock.adjust(2 * DAY)
      const recent = yield* runOne()
      expect(yield* appexec.operator.prune()).toBe(0)
      expect(yield* appexec.operator.prune({ olderThan: "1 day" })).toBe(1)
      expect(yield* stored(old)).toEqual({ execution: false, deliveries: 0, media: false })
      expect(yield* stored(recent)).toEqual({ execution: true, deliveries: 1, media: true })
      yield* TestClock.adjust(1)
      expect(yield* appexec.operator.prune({ olderThan: 0 })).toBe(1)
      expect((yield* stored(recent)).execution).toBe(false)
    }).pipe(Effect.provide(harness("365 days"))))

  it.scoped("operator.listExecutions filters by workspace name and status, newest first", () =>
    Effect.gen(function*() {
      const appexec = yield* Appexec.Appexec
      const a1 = yield* runOne("alpha")
      const b1 = yield* runOne("beta")
      const a2 = yield* runOne("alpha")
      const ids = (records: ReadonlyArray<{ readonly executionId: string }>) => records.map((r) => r.executionId)
      expect(ids(yield* appexec.operator.listExecutions())).toEqual([a2, b1, a1])
      expect(ids(yield* appexec.operator.listExecutions({ workspace: "alpha" }))).toEqual([a2, a1])
      expect(ids(yield* appexec.operator.listExecutions({ workspace: "alpha", limit: 1 }))).toEqual([a2])
      expect(yield* appexec.operator.listExecutions({ status: "queued" })).toEqual([])
      expect(ids(yield* appexec.operator.listExecutions({ status: "completed", workspace: "beta" }))).toEqual([b1])
      const unknown = yield* Effect.flip(appexec.operator.listExecutions({ workspace: "gamma" }))
      expect(unknown).toMatchObject({ _tag: "InvalidRequest", message: "No workspace is named 'gamma'." })
      const tooMany = yield* Effect.flip(appexec.operator.listExecutions({ limit: 1001 }))
      expect(tooMany._tag).toBe("InvalidRequest")
    }).pipe(Effect.provide(harness())))
})
