/**
 * Contract of `OperatorViews`: each workspace's queued and running executions, and each app's by
 * workflow version, running those under a live lease and queued the others (a run handed back, or
 * whose lease ran out, waits; a claim whose start is not saved yet runs); the executions finished in a window, by status, in buckets from its start;
 * the workers holding leases, with how many and the latest end; the failed deliveries of every workspace, newest first.
 *
 * A storage that holds no workspace names beside its executions (memory) answers `name: null`;
 * one that does must answer the workspace's name.
 */
import { Ids } from "@appexec/api"
import { AppStore, ExecutionStore, OperatorViews, WebhookOutbox } from "@appexec/core"
import { expect } from "@effect/vitest"
import { Clock, Effect, Option, TestClock } from "effect"
import {
  claimSome,
  completed,
  contract,
  delivery,
  LEASE,
  type Owner,
  ports,
  queued,
  seedOwner,
  started,
  uuid
} from "../internal/StorageFixtures.js"

/** Inserts execution `n` of `owner` alone in the queue's reach, claims it and saves it as `finish` makes it. */
const finish = (
  owner: Owner,
  n: number,
  at: number,
  status: "completed" | "failed",
  outbox?: (record: ReturnType<typeof queued>) => WebhookOutbox.OutboxEntry
) =>
  Effect.gen(function*() {
    const store = yield* ExecutionStore.ExecutionStore
    yield* store.insert(queued(owner, n))
    const claim = yield* claimSome("finisher", LEASE)
    const done = status === "completed"
      ? completed(claim.execution, at)
      : { ...started(claim.execution, at), status: "failed" as const, completedAt: at, errorMessage: "it broke" }
    yield* store.save(done, claim.lease, outbox?.(claim.execution))
  })

/** The workspaces' load at the test clock's now, names aside (memory holds none). */
const workspaceLoad = Effect.gen(function*() {
  const views = yield* OperatorViews.OperatorViews
  const load = yield* views.workspaceLoad(yield* Clock.currentTimeMillis)
  return load.map(({ name: _, ...counts }) => counts)
})

/** The apps' load at the test clock's now. */
const appLoad = Effect.flatMap(
  OperatorViews.OperatorViews,
  (views) => Effect.flatMap(Clock.currentTimeMillis, views.appLoad)
)

/** Expects `owner`'s one workspace and app version to have `queued` and `running` executions, and no other. */
const expectLoad = (owner: Owner, counts: { readonly queued: number; readonly running: number }) =>
  Effect.gen(function*() {
    expect(yield* workspaceLoad).toEqual([{ workspaceId: owner.workspaceId, ...counts }])
    expect(yield* appLoad).toEqual([{ appId: owner.appId, workflowId: owner.workflowId, ...counts }])
  })

/** Runs the operator views contract against fresh storage from `makeStorage` for every test. */
export const suite = contract("OperatorViews contract", (test) => {
  test(
    "counts each workspace's queued and running executions, leaving out workspaces with none",
    Effect.gen(function*() {
      const a = yield* seedOwner(1)
      const b = yield* seedOwner(2)
      const c = yield* seedOwner(3)
      const store = yield* ExecutionStore.ExecutionStore
      const views = yield* OperatorViews.OperatorViews
      expect(yield* views.workspaceLoad(0)).toEqual([])
      // c's only execution is finished; a's first runs; a's next two and b's one wait.
      yield* finish(c, 1, 5, "completed")
      yield* store.insert(queued(a, 2))
      const claim = yield* claimSome("w", LEASE)
      yield* store.save(started(claim.execution, 6), claim.lease)
      for (const [owner, n] of [[a, 3], [a, 4], [b, 5]] as const) yield* store.insert(queued(owner, n))

      const load = yield* views.workspaceLoad(yield* Clock.currentTimeMillis)
      expect(load.map(({ name: _, ...counts }) => counts)).toEqual([
        { workspaceId: a.workspaceId, queued: 2, running: 1 },
        { workspaceId: b.workspaceId, queued: 1, running: 0 }
      ])
      for (const [i, n] of [1, 2].entries()) expect([null, `workspace ${n}`]).toContain(load[i]!.name)
    })
  )

  test(
    "counts each app's queued and running executions by workflow version, leaving out apps with none",
    Effect.gen(function*() {
      const a = yield* seedOwner(1)
      const b = yield* seedOwner(2)
      const c = yield* seedOwner(3)
      const store = yield* ExecutionStore.ExecutionStore
      const apps = yield* AppStore.AppStore
      expect(yield* appLoad).toEqual([])
      // c's only execution is finished; a's first runs, its next waits; then a gets a second
      // version, whose two executions wait beside the first version's; b's one waits.
      yield* finish(c, 1, 5, "completed")
      yield* store.insert(queued(a, 2))
      const claim = yield* claimSome("w", LEASE)
      yield* store.save(started(claim.execution, 6), claim.lease)
      yield* store.insert(queued(a, 3))
      const app = Option.getOrThrow(yield* apps.get(a.appId))
      const second = { ...a, workflowId: Ids.WorkflowId.make(uuid(4, 11)) }
      yield* apps.save({ ...app, workflowId: second.workflowId, updatedAt: 7 }, {
        workflowId: second.workflowId,
        appId: a.appId,
        definition: { name: "owner", nodes: [], edges: [] },
        createdAt: 7
      })
      for (const [owner, n] of [[second, 4], [second, 5], [b, 6]] as const) yield* store.insert(queued(owner, n))

      expect(yield* appLoad).toEqual([
        { appId: a.appId, workflowId: a.workflowId, queued: 1, running: 1 },
        { appId: a.appId, workflowId: second.workflowId, queued: 2, running: 0 },
        { appId: b.appId, workflowId: b.workflowId, queued: 1, running: 0 }
      ])
    })
  )

  test(
    "counts a run handed back by a stopping worker as queued, though its status stays running, until it is claimed again",
    Effect.gen(function*() {
      const a = yield* seedOwner(1)
      const { queue, store } = yield* ports
      yield* store.insert(queued(a, 1))
      const claim = yield* claimSome("stopping", LEASE)
      yield* store.save(started(claim.execution, 0), claim.lease)
      yield* expectLoad(a, { queued: 0, running: 1 })

      yield* queue.release(claim.lease)
      const handedBack = Option.getOrThrow(yield* store.get(claim.execution.executionId))
      expect(handedBack.status).toBe("running")
      yield* expectLoad(a, { queued: 1, running: 0 })

      yield* claimSome("next", LEASE)
      yield* expectLoad(a, { queued: 0, running: 1 })
    })
  )

  test(
    "counts an execution whose lease ran out as queued, from the instant it ends",
    Effect.gen(function*() {
      const a = yield* seedOwner(1)
      const store = yield* ExecutionStore.ExecutionStore
      yield* store.insert(queued(a, 1))
      const claim = yield* claimSome("lost", LEASE)
      yield* store.save(started(claim.execution, 0), claim.lease)
      yield* TestClock.adjust(LEASE - 1)
      yield* expectLoad(a, { queued: 0, running: 1 })
      yield* TestClock.adjust(1)
      yield* expectLoad(a, { queued: 1, running: 0 })
    })
  )

  test(
    "counts a claimed execution as running while its lease lives, though its status still says queued",
    Effect.gen(function*() {
      const a = yield* seedOwner(1)
      const store = yield* ExecutionStore.ExecutionStore
      yield* store.insert(queued(a, 1))
      yield* store.insert(queued(a, 2))
      // The first is claimed; its start is not saved (a run saves it with a later turn's writes).
      const claim = yield* claimSome("w", LEASE)
      expect(Option.getOrThrow(yield* store.get(claim.execution.executionId)).status).toBe("queued")
      yield* expectLoad(a, { queued: 1, running: 1 })
      yield* TestClock.adjust(LEASE)
      yield* expectLoad(a, { queued: 2, running: 0 })
    })
  )

  test(
    "counts the executions finished in the window by status, in buckets from its start, only buckets with some",
    Effect.gen(function*() {
      const a = yield* seedOwner(1)
      const views = yield* OperatorViews.OperatorViews
      const finishes = [
        [50_000, "completed"], // before the window
        [60_000, "completed"], // its first instant
        [119_999, "failed"],
        [130_000, "completed"],
        [200_000, "failed"],
        [240_000, "completed"] // its end: outside
      ] as const
      for (const [i, [at, status]] of finishes.entries()) yield* finish(a, i + 1, at, status)
      // One that runs is not counted.
      const store = yield* ExecutionStore.ExecutionStore
      yield* store.insert(queued(a, 20))
      const claim = yield* claimSome("w", LEASE)
      yield* store.save(started(claim.execution, 150_000), claim.lease)

      expect(yield* views.finishedPerBucket(60_000, 240_000, 60_000)).toEqual([
        { start: 60_000, completed: 1, failed: 1 },
        { start: 120_000, completed: 1, failed: 0 },
        { start: 180_000, completed: 0, failed: 1 }
      ])
      expect(yield* views.finishedPerBucket(0, 300_000, 300_000)).toEqual([
        { start: 0, completed: 4, failed: 2 }
      ])
      expect(yield* views.finishedPerBucket(300_000, 400_000, 60_000)).toEqual([])
    })
  )

  test(
    "lists the workers that hold leases, with how many and the latest end; a finished, released or never claimed one holds none",
    Effect.gen(function*() {
      const a = yield* seedOwner(1)
      const { queue, store } = yield* ports
      const views = yield* OperatorViews.OperatorViews
      // The fifth stays queued with no worker: no holder without a name is listed.
      for (const n of [1, 2, 3, 4, 5]) yield* store.insert(queued(a, n))
      expect(yield* views.leaseHolders).toEqual([])
      const first = yield* claimSome("worker-a", LEASE)
      yield* store.save(started(first.execution, 0), first.lease)
      yield* TestClock.adjust(1_000)
      yield* claimSome("worker-a", LEASE)
      const other = yield* claimSome("worker-b", LEASE)
      const gone = yield* claimSome("worker-c", LEASE)
      expect(yield* views.leaseHolders).toEqual([
        { workerId: "worker-a", held: 2, leaseExpiresAt: 31_000 },
        { workerId: "worker-b", held: 1, leaseExpiresAt: 31_000 },
        { workerId: "worker-c", held: 1, leaseExpiresAt: 31_000 }
      ])
      // worker-a renews its first lease later; worker-b finishes; worker-c gives its lease back.
      yield* TestClock.adjust(4_000)
      yield* queue.renew(first.lease, LEASE)
      yield* store.save(completed(other.execution, 5_000), other.lease)
      yield* queue.release(gone.lease)
      expect(yield* views.leaseHolders).toEqual([{ workerId: "worker-a", held: 2, leaseExpiresAt: 35_000 }])
    })
  )

  test(
    "lists the failed deliveries of every workspace newest first, with their workspace and app, up to the limit",
    Effect.gen(function*() {
      const a = yield* seedOwner(1)
      const b = yield* seedOwner(2)
      const outbox = yield* WebhookOutbox.WebhookOutbox
      const views = yield* OperatorViews.OperatorViews
      // Deliveries 1 (a), 2 (b) and 3 (a) are claimed and fail for good; 4 (b) is delivered; 5 (a) is pending.
      for (const [owner, n] of [[a, 1], [b, 2], [a, 3], [b, 4], [a, 5]] as const) {
        yield* finish(owner, n, n * 1_000, "completed", (record) => delivery(record, n, n * 1_000))
      }
      yield* TestClock.adjust(10_000)
      const claimed = yield* outbox.claimDue(4, LEASE)
      expect(claimed).toHaveLength(4)
      for (const claim of claimed) {
        const n = Number.parseInt(claim.deliveryId.slice(-12), 16)
        yield* outbox.recordAttempt(claim, { at: 10_000, statusCode: n === 4 ? 200 : 500, error: null }, {
          final: n === 4 ? "delivered" : "failed"
        })
      }

      const failed = yield* views.failedDeliveries(10)
      expect(failed.map((f) => [f.entry.deliveryId, f.workspaceId, f.appId])).toEqual([
        [delivery(queued(a, 3), 3, 0).deliveryId, a.workspaceId, a.appId],
        [delivery(queued(b, 2), 2, 0).deliveryId, b.workspaceId, b.appId],
        [delivery(queued(a, 1), 1, 0).deliveryId, a.workspaceId, a.appId]
      ])
      expect([null, "workspace 1"]).toContain(failed[0]!.workspaceName)
      expect([null, "workspace 2"]).toContain(failed[1]!.workspaceName)
      expect(failed[0]!.entry).toMatchObject({
        status: "failed",
        url: "https://example.com/hook/3",
        attempts: [{ at: 10_000, statusCode: 500, error: null }]
      })
      expect((yield* views.failedDeliveries(2)).map((f) => f.entry.deliveryId)).toEqual(
        failed.slice(0, 2).map((f) => f.entry.deliveryId)
      )
      // A redelivery that is under way is not failed any more.
      yield* outbox.redeliver(failed[0]!.entry.deliveryId, 20_000)
      expect((yield* views.failedDeliveries(10)).map((f) => f.entry.deliveryId)).toEqual(
        failed.slice(1).map((f) => f.entry.deliveryId)
      )
    })
  )
})
