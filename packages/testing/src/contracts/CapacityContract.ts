/**
 * Contract of the queue's capacity and routing (docs/scaling.md#pools-and-limits): claims in
 * priority order with age lifting priority and FIFO within a priority, the queue position in the
 * same order, claims of the workflow versions a worker runs only, and caps per app and per
 * workspace that a claim respects without holding back the other apps of a workspace.
 */
import { Ids } from "@appexec/api"
import { ExecutionQueue, type ExecutionRecord, ExecutionStore } from "@appexec/core"
import { expect } from "@effect/vitest"
import { Effect } from "effect"
import { completed, contract, LEASE, type Owner, ports, queued, seedOwner, uuid } from "../internal/StorageFixtures.js"

const claimIds = (options: ExecutionQueue.ClaimOptions) =>
  Effect.flatMap(ExecutionQueue.ExecutionQueue, (queue) => queue.claimBatch("w", LEASE, options)).pipe(
    Effect.map((claims) => claims.map((c) => c.execution.executionId))
  )

/** Execution `n` of `owner` with `priority`, accepted at `createdAt`. */
const withPriority = (owner: Owner, n: number, priority: number, createdAt = n) => ({
  ...queued(owner, n, createdAt),
  priority
})

/** Execution `n` in the workspace of `owner`, of the app and workflow version of `of`. */
const ofApp = (owner: Owner, of: Owner, n: number): ExecutionRecord.ExecutionRecord => ({
  ...queued(owner, n),
  appId: of.appId,
  workflowId: of.workflowId
})

/** The id of execution `n` (as `queued` makes it). */
const id = (n: number) => Ids.ExecutionId.make(uuid(5, n))

/** Runs the capacity contract against fresh storage from `makeStorage` for every test. */
export const suite = contract("Capacity contract", (test) => {
  test(
    "claims a higher priority first, FIFO within a priority; age lifts a lower one",
    Effect.gen(function*() {
      const owner = yield* seedOwner()
      const { store } = yield* ports
      // A minute of waiting is worth a step of priority: execution 1 (priority 0) goes after those
      // of priority 2 accepted a minute later, but before execution 5 (priority 1) accepted two
      // minutes later.
      const base = 1_000_000
      yield* store.insert(withPriority(owner, 1, 0, base))
      yield* store.insert(withPriority(owner, 2, 2, base + 60_001))
      yield* store.insert(withPriority(owner, 3, 2, base + 60_002))
      yield* store.insert(withPriority(owner, 4, -1, base + 60_003))
      yield* store.insert(withPriority(owner, 5, 1, base + 120_004))
      expect(yield* store.queuePosition(id(1))).toBe(2)
      expect(yield* store.queuePosition(id(4))).toBe(4)
      expect(yield* claimIds({ limit: 10 })).toEqual([2, 3, 1, 5, 4].map(id))
    })
  )

  test(
    "claims only the workflow versions a worker runs, whatever is older",
    Effect.gen(function*() {
      const owner = yield* seedOwner(1)
      const other = yield* seedOwner(2)
      const { store } = yield* ports
      yield* store.insert(queued(owner, 1))
      yield* store.insert(ofApp(owner, other, 2))
      yield* store.insert(queued(owner, 3))
      yield* store.insert(ofApp(other, other, 4))
      expect(yield* claimIds({ limit: 10, workflows: [] })).toEqual([])
      expect(yield* claimIds({ limit: 10, workflows: [other.workflowId] })).toEqual([id(2), id(4)])
      expect(yield* claimIds({ limit: 1, workflows: [owner.workflowId] })).toEqual([id(1)])
      expect(yield* claimIds({ limit: 10 })).toEqual([id(3)])
    })
  )

  test(
    "an app at its cap is passed over for the next app of its workspace until one of its runs ends",
    Effect.gen(function*() {
      const owner = yield* seedOwner(1)
      const other = yield* seedOwner(2)
      const { queue, store } = yield* ports
      for (const n of [1, 2, 3, 4]) yield* store.insert(queued(owner, n))
      yield* store.insert(ofApp(owner, other, 5))
      yield* store.insert(ofApp(owner, other, 6))
      const appLimits = new Map([[owner.appId as string, 2]])
      const first = yield* queue.claimBatch("w", LEASE, { limit: 10, appLimits })
      expect(first.map((c) => c.execution.executionId)).toEqual([1, 2, 5, 6].map(id))
      expect(yield* claimIds({ limit: 10, appLimits })).toEqual([])
      yield* store.save(completed(first[0]!.execution, 5), first[0]!.lease)
      expect(yield* claimIds({ limit: 10, appLimits })).toEqual([id(3)])
      // Without the cap, the rest goes.
      expect(yield* claimIds({ limit: 10 })).toEqual([id(4)])
    })
  )

  test(
    "a resource at its cap holds back the versions that use it, of every app, and no other",
    Effect.gen(function*() {
      const owner = yield* seedOwner(1)
      const other = yield* seedOwner(2)
      const { queue, store } = yield* ports
      for (const n of [1, 2, 3]) yield* store.insert(queued(owner, n))
      yield* store.insert(ofApp(owner, other, 4))
      const resourceLimits = [{ resource: "gpu", max: 1, workflows: [owner.workflowId as string] }]
      const first = yield* queue.claimBatch("w", LEASE, { limit: 10, resourceLimits })
      expect(first.map((c) => c.execution.executionId)).toEqual([id(1), id(4)])
      expect(yield* claimIds({ limit: 10, resourceLimits })).toEqual([])
      yield* store.save(completed(first[0]!.execution, 5), first[0]!.lease)
      expect(yield* claimIds({ limit: 10, resourceLimits })).toEqual([id(2)])
    })
  )

  test(
    "a workspace's own cap replaces the instance's default",
    Effect.gen(function*() {
      const one = yield* seedOwner(1)
      const two = yield* seedOwner(2)
      const store = yield* ExecutionStore.ExecutionStore
      for (const n of [1, 2, 3]) yield* store.insert(queued(one, n))
      for (const n of [4, 5, 6]) yield* store.insert(queued(two, n))
      const options = {
        limit: 10,
        maxRunningPerWorkspace: 2,
        workspaceLimits: new Map([[one.workspaceId as string, 1]])
      }
      const claimed = yield* claimIds(options)
      expect([...claimed].sort()).toEqual([1, 4, 5].map(id))
    })
  )
})
