/**
 * Contract of `ExecutionStore`: records round-trip unchanged, and every write after acceptance
 * is fenced by the current lease; a terminal save ends the lease and records its webhook atomically.
 */
import { Ids } from "@appexec/api"
import { ExecutionRecord, ExecutionStore } from "@appexec/core"
import { expect } from "@effect/vitest"
import { Clock, Effect, Option, TestClock } from "effect"
import {
  attempted,
  claimSome,
  completed,
  completeWithWebhook,
  contract,
  delivery,
  LEASE,
  queued,
  seeded,
  seedOwner,
  started,
  uuid
} from "../internal/StorageFixtures.js"

/** Executions 1 (completed), 2 (running) and 3 (queued) of workspace 1, their ids and an unknown one. */
const threeStates = Effect.gen(function*() {
  const { owner, store } = yield* seeded
  for (const n of [1, 2, 3]) yield* store.insert(queued(owner, n))
  const first = yield* claimSome("a", LEASE)
  yield* store.save(completed(started(first.execution, 1), 2), first.lease)
  const second = yield* claimSome("a", LEASE)
  yield* store.save(started(second.execution, 1), second.lease)
  const unknown = Ids.ExecutionId.make(uuid(5, 99))
  const ids = [1, 2, 3].map((n) => queued(owner, n).executionId)
  return { first, ids, store, unknown }
})

/** The open executions' counts at the test clock's now. */
const countOpen = Effect.flatMap(
  ExecutionStore.ExecutionStore,
  (store) => Effect.flatMap(Clock.currentTimeMillis, store.countOpen)
)

/** Runs the execution-store contract against fresh storage from `makeStorage` for every test. */
export const suite = contract("ExecutionStore contract", (test) => {
  test(
    "an inserted execution reads back exactly; an unknown id reads as none",
    Effect.gen(function*() {
      const { owner, store } = yield* seeded
      const record = { ...queued(owner, 1), webhookUrl: null }
      yield* store.insert(record)
      expect(yield* store.get(record.executionId)).toEqual(Option.some(record))
      expect(yield* store.get(Ids.ExecutionId.make(uuid(5, 99)))).toEqual(Option.none())
    })
  )

  test(
    "a save under the current lease replaces the record",
    Effect.gen(function*() {
      const { owner, store } = yield* seeded
      yield* store.insert(queued(owner, 1))
      const claim = yield* claimSome("a", LEASE)
      const running = started(claim.execution, 10)
      yield* store.save(running, claim.lease)
      expect(yield* store.get(running.executionId)).toEqual(Option.some(running))
      const done = completed(running, 20)
      yield* store.save(done, claim.lease)
      expect(yield* store.get(running.executionId)).toEqual(Option.some(done))
    })
  )

  test(
    "a save writes what a transition changes; the rest stays as inserted",
    Effect.gen(function*() {
      const { owner, store } = yield* seeded
      const record = queued(owner, 1)
      yield* store.insert(record)
      const claim = yield* claimSome("a", LEASE)
      const done = completed(started(claim.execution, 10), 20)
      // Not a transition's to change: a save sets the status, outputs, error and times alone.
      yield* store.save(
        { ...done, inputs: { prompt: "changed" }, webhookUrl: "https://example.com/changed", createdAt: 99 },
        claim.lease
      )
      expect(yield* store.get(record.executionId)).toEqual(Option.some(done))
    })
  )

  test(
    "the view of an execution is its public part, outputs and inputs as stored, at every transition",
    Effect.gen(function*() {
      const { owner, store } = yield* seeded
      const viewMatches = (record: ExecutionRecord.ExecutionRecord) =>
        Effect.gen(function*() {
          const { inputsJson: _inputs, outputsJson: _outputs, ...expected } = ExecutionRecord.viewOf(record)
          const view = yield* store.getView(record.executionId)
          expect(
            Option.map(view, ({ inputsJson, outputsJson, ...rest }) => ({
              ...rest,
              outputs: JSON.parse(outputsJson),
              inputs: JSON.parse(inputsJson)
            }))
          ).toEqual(Option.some({ ...expected, outputs: record.outputs, inputs: record.inputs }))
        })
      const record = queued(owner, 1)
      yield* store.insert(record)
      yield* viewMatches(record)
      const claim = yield* claimSome("a", LEASE)
      const running = started(claim.execution, 10)
      yield* store.save(running, claim.lease)
      yield* viewMatches(running)
      const done = completed(running, 20)
      yield* store.save(done, claim.lease)
      yield* viewMatches(done)
      expect(yield* store.getView(Ids.ExecutionId.make(uuid(5, 99)))).toEqual(Option.none())
    })
  )

  test(
    "a save under a superseded lease fails with LeaseLost and writes nothing",
    Effect.gen(function*() {
      const { outbox, owner, store } = yield* seeded
      yield* store.insert(queued(owner, 1))
      const first = yield* claimSome("a", LEASE)
      yield* TestClock.adjust(LEASE)
      const second = yield* claimSome("a", LEASE)
      const stale = completed(first.execution, 1)
      const error = yield* Effect.flip(store.save(stale, first.lease, delivery(stale, 1, 1)))
      expect(error).toMatchObject({ _tag: "LeaseLost", executionId: stale.executionId })
      expect(yield* store.get(stale.executionId)).toEqual(Option.some(attempted(queued(owner, 1), 2)))
      expect(yield* outbox.forExecution(stale.executionId)).toEqual([])
      yield* store.save(started(second.execution, 2), second.lease)
    })
  )

  test(
    "a save under a released lease fails with LeaseLost",
    Effect.gen(function*() {
      const { owner, queue, store } = yield* seeded
      yield* store.insert(queued(owner, 1))
      const claim = yield* claimSome("a", LEASE)
      yield* queue.release(claim.lease)
      const error = yield* Effect.flip(store.save(started(claim.execution, 1), claim.lease))
      expect(error._tag).toBe("LeaseLost")
    })
  )

  test(
    "a terminal save ends the lease and records the webhook delivery with it",
    Effect.gen(function*() {
      const { outbox, owner, queue, store } = yield* seeded
      yield* store.insert(queued(owner, 1))
      const claim = yield* claimSome("a", LEASE)
      const done = completed(started(claim.execution, 1), 2)
      const entry = delivery(done, 1, 2)
      yield* store.save(done, claim.lease, entry)
      expect(yield* outbox.forExecution(done.executionId)).toEqual([entry])
      const after = yield* Effect.flip(store.save(done, claim.lease))
      expect(after._tag).toBe("LeaseLost")
      const renew = yield* Effect.flip(queue.renew(claim.lease, LEASE))
      expect(renew._tag).toBe("LeaseLost")
    })
  )

  test(
    "a non-terminal save does not record a webhook delivery",
    Effect.gen(function*() {
      const { outbox, owner, store } = yield* seeded
      yield* store.insert(queued(owner, 1))
      const claim = yield* claimSome("a", LEASE)
      const running = started(claim.execution, 1)
      yield* store.save(running, claim.lease, delivery(running, 1, 1))
      expect(yield* outbox.forExecution(running.executionId)).toEqual([])
    })
  )

  test(
    "a trace context round-trips with the execution and with its webhook delivery",
    Effect.gen(function*() {
      const { outbox, owner, store } = yield* seeded
      const traceParent = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
      const record = { ...queued(owner, 1), traceParent }
      yield* store.insert(record)
      expect(yield* store.get(record.executionId)).toEqual(Option.some(record))
      const claim = yield* claimSome("a", LEASE)
      expect(claim.execution.traceParent).toBe(traceParent)
      const done = completed(claim.execution, 2)
      const entry = {
        ...delivery(done, 1, 2),
        traceParent: "00-0af7651916cd43dd8448eb211c80319c-00f067aa0ba902b7-01"
      }
      yield* store.save(done, claim.lease, entry)
      expect(yield* outbox.forExecution(done.executionId)).toEqual([entry])
      yield* TestClock.adjust(2)
      expect(yield* outbox.claimDue(10, LEASE)).toEqual([{ ...entry, nextAttemptAt: 2 + LEASE }])
    })
  )

  test(
    "list answers newest first, filtered by workspace and status, up to the limit",
    Effect.gen(function*() {
      const a = yield* seedOwner(1)
      const b = yield* seedOwner(2)
      const store = yield* ExecutionStore.ExecutionStore
      yield* store.insert(queued(a, 1))
      yield* store.insert(queued(b, 2))
      yield* store.insert(queued(a, 3))
      const claim = yield* claimSome("a", LEASE)
      yield* store.save(completed(claim.execution, 5), claim.lease)
      const ids = (records: ReadonlyArray<{ readonly executionId: string }>) => records.map((r) => r.executionId)
      expect(ids(yield* store.list({ limit: 10 }))).toEqual([uuid(5, 3), uuid(5, 2), uuid(5, 1)])
      expect(ids(yield* store.list({ limit: 2 }))).toEqual([uuid(5, 3), uuid(5, 2)])
      expect(ids(yield* store.list({ limit: 10, workspaceId: a.workspaceId }))).toEqual([uuid(5, 3), uuid(5, 1)])
      expect(ids(yield* store.list({ limit: 10, status: "completed" }))).toEqual([uuid(5, 1)])
      expect(ids(yield* store.list({ limit: 10, status: "queued", workspaceId: a.workspaceId }))).toEqual([
        uuid(5, 3)
      ])
      expect(yield* store.list({ limit: 10, status: "failed" })).toEqual([])
      // The oldest queued execution's createdAt comes with the counts (the metrics' queue age).
      expect(yield* countOpen).toEqual({ queued: 2, running: 0, oldestQueuedAt: 2 })
      const next = yield* claimSome("a", LEASE)
      yield* store.save(started(next.execution, 6), next.lease)
      expect(yield* countOpen).toEqual({ queued: 1, running: 1, oldestQueuedAt: 3 })
      const last = yield* claimSome("a", LEASE)
      yield* store.save(started(last.execution, 7), last.lease)
      expect(yield* countOpen).toEqual({ queued: 0, running: 2, oldestQueuedAt: null })
    })
  )

  test(
    "countOpen counts a run handed back by a stopping worker as queued, though its status stays running, until it is claimed again",
    Effect.gen(function*() {
      const { owner, queue, store } = yield* seeded
      yield* store.insert(queued(owner, 1))
      yield* store.insert(queued(owner, 2))
      const claim = yield* claimSome("stopping", LEASE)
      yield* store.save(started(claim.execution, 0), claim.lease)
      expect(yield* countOpen).toEqual({ queued: 1, running: 1, oldestQueuedAt: 2 })

      yield* queue.release(claim.lease)
      expect(Option.getOrThrow(yield* store.get(claim.execution.executionId)).status).toBe("running")
      // It waits again, and has waited since it was accepted.
      expect(yield* countOpen).toEqual({ queued: 2, running: 0, oldestQueuedAt: 1 })

      const next = yield* claimSome("next", LEASE)
      const waiting = next.execution.executionId === claim.execution.executionId ? 2 : 1
      expect(yield* countOpen).toEqual({ queued: 1, running: 1, oldestQueuedAt: waiting })
    })
  )

  test(
    "countOpen counts an execution whose lease ran out as queued, from the instant it ends",
    Effect.gen(function*() {
      const { owner, store } = yield* seeded
      yield* store.insert(queued(owner, 1))
      const claim = yield* claimSome("lost", LEASE)
      yield* store.save(started(claim.execution, 0), claim.lease)
      yield* TestClock.adjust(LEASE - 1)
      expect(yield* countOpen).toEqual({ queued: 0, running: 1, oldestQueuedAt: null })
      yield* TestClock.adjust(1)
      expect(yield* countOpen).toEqual({ queued: 1, running: 0, oldestQueuedAt: 1 })
    })
  )

  test(
    "countOpen counts a claimed execution as running while its lease lives, though its status still says queued",
    Effect.gen(function*() {
      const { owner, store } = yield* seeded
      yield* store.insert(queued(owner, 1))
      yield* store.insert(queued(owner, 2))
      // The first is claimed; its start is not saved (a run saves it with a later turn's writes).
      const claim = yield* claimSome("w", LEASE)
      expect(Option.getOrThrow(yield* store.get(claim.execution.executionId)).status).toBe("queued")
      expect(yield* countOpen).toEqual({ queued: 1, running: 1, oldestQueuedAt: 2 })
    })
  )

  test(
    "finished executions before a cutoff are found oldest first and deleted with their deliveries; open ones stay",
    Effect.gen(function*() {
      const { outbox, owner, store } = yield* seeded
      yield* completeWithWebhook(queued(owner, 1), 1, 300)
      yield* completeWithWebhook(queued(owner, 2), 2, 100)
      yield* completeWithWebhook(queued(owner, 3), 3, 900)
      yield* store.insert(queued(owner, 4))
      const expired = yield* store.finishedBefore(500, 10)
      expect(expired).toEqual([uuid(5, 2), uuid(5, 1)])
      expect(yield* store.finishedBefore(500, 1)).toEqual([uuid(5, 2)])
      const open = Ids.ExecutionId.make(uuid(5, 4))
      expect(yield* store.deleteFinished([...expired, open])).toBe(2)
      expect(yield* store.get(expired[0]!)).toEqual(Option.none())
      expect(yield* outbox.forExecution(expired[0]!)).toEqual([])
      expect(yield* outbox.forExecution(expired[1]!)).toEqual([])
      expect(Option.isSome(yield* store.get(open))).toBe(true)
      expect(yield* outbox.forExecution(Ids.ExecutionId.make(uuid(5, 3)))).toHaveLength(1)
      expect(yield* store.finishedBefore(500, 10)).toEqual([])
      expect(yield* store.deleteFinished([])).toBe(0)
    })
  )

  test(
    "finishedAmong names the finished executions among the ids given, and no unknown one",
    Effect.gen(function*() {
      const { first, ids, store, unknown } = yield* threeStates
      expect(yield* store.finishedAmong([...ids, unknown])).toEqual([first.execution.executionId])
      expect(yield* store.finishedAmong([])).toEqual([])
    })
  )

  test(
    "viewsAmong answers the views of the ids given as getView does, and none of an unknown one",
    Effect.gen(function*() {
      const { ids, store, unknown } = yield* threeStates
      const views = yield* store.viewsAmong([...ids, unknown])
      const expected = yield* Effect.forEach(ids, (id) => Effect.map(store.getView(id), Option.getOrThrow))
      expect([...views].sort((a, b) => a.executionId.localeCompare(b.executionId))).toEqual(
        [...expected].sort((a, b) => a.executionId.localeCompare(b.executionId))
      )
      expect(views.map((v) => v.status).sort()).toEqual(["completed", "queued", "running"])
      expect(yield* store.viewsAmong([])).toEqual([])
    })
  )
})
