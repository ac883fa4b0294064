/**
 * Contract of `ProcessRegistry`: a process's row is written once under its process id (a later
 * beat moves its heartbeat and lease end, never its name, role, version or start), listed by
 * name, then start, then id, deleted as the process stops, and pruned once its lease ended
 * before the given time; and `OperatorViews.holdersOf` names the process holding each running
 * execution's live lease.
 */
import { ExecutionStore, OperatorViews, ProcessRegistry } from "@appexec/core"
import { expect } from "@effect/vitest"
import { Effect } from "effect"
import { claimSome, contract, LEASE, queued, seedOwner, started } from "../internal/StorageFixtures.js"

const entry = (
  processId: string,
  role: ProcessRegistry.Role,
  startedAt: number,
  heartbeatAt: number,
  leaseMs = 3_000
) =>
  new ProcessRegistry.ProcessEntry({
    processId,
    name: processId.split("#")[0]!,
    role,
    version: "0.1.0",
    startedAt,
    heartbeatAt,
    expiresAt: heartbeatAt + leaseMs
  })

/** Runs the registry contract against fresh storage from `makeStorage` for every test. */
export const suite = contract("ProcessRegistry contract", (test) => {
  test(
    "writes a process once, moves only its heartbeat, lists every row in order, deletes and prunes",
    Effect.gen(function*() {
      const registry = yield* ProcessRegistry.ProcessRegistry
      expect(yield* registry.list).toEqual([])
      const api = entry("api-1#aaaaaa", "api", 1_000, 1_000)
      const worker = entry("host:42#bbbbbb", "worker", 2_000, 2_000)
      const restarted = entry("host:42#cccccc", "worker", 1_500, 1_500)
      yield* registry.beat(worker)
      yield* registry.beat(api)
      yield* registry.beat(restarted)
      expect(yield* registry.list).toEqual([api, restarted, worker])
      // A later beat with other words for the rest: only the heartbeat and the lease end move.
      yield* registry.beat(
        new ProcessRegistry.ProcessEntry({ ...entry("api-1#aaaaaa", "serve", 9, 5_000), version: "9" })
      )
      const [beaten] = yield* registry.list
      expect(beaten).toEqual(entry("api-1#aaaaaa", "api", 1_000, 5_000))
      expect(ProcessRegistry.isLive(beaten!, 7_999)).toBe(true)
      expect(ProcessRegistry.isLive(beaten!, 8_000)).toBe(false)
      expect(yield* registry.remove(worker.processId)).toBe(true)
      expect(yield* registry.remove(worker.processId)).toBe(false)
      // Pruned: the rows whose lease ended before the time given, not at it (the restarted one: 4,500).
      expect(yield* registry.prune(4_500)).toBe(0)
      expect(yield* registry.prune(4_501)).toBe(1)
      expect((yield* registry.list).map((p) => p.processId)).toEqual(["api-1#aaaaaa"])
      expect(yield* registry.prune(8_000)).toBe(0)
    })
  )

  test(
    "names the process holding each running execution's live lease, none for a queued or lapsed one",
    Effect.gen(function*() {
      const owner = yield* seedOwner(1)
      const store = yield* ExecutionStore.ExecutionStore
      const views = yield* OperatorViews.OperatorViews
      yield* store.insert(queued(owner, 1))
      const claim = yield* claimSome("host:42#bbbbbb", LEASE)
      yield* store.save(started(claim.execution, 1), claim.lease)
      yield* store.insert(queued(owner, 2))
      const running = claim.execution.executionId
      const waiting = queued(owner, 2).executionId
      const now = claim.lease.expiresAt - 1
      expect(yield* views.holdersOf([running, waiting], now)).toEqual(new Map([[running, "host:42#bbbbbb"]]))
      expect(yield* views.holdersOf([], now)).toEqual(new Map())
      // Once the lease ran out, nobody holds it.
      expect(yield* views.holdersOf([running], claim.lease.expiresAt)).toEqual(new Map())
    })
  )
})
