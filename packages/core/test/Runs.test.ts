/**
 * The registry of a worker's runs (`internal/engine/Runs.ts`): the one place that makes, changes and
 * removes a run. Cancels, renewals and deadlines reach a run through it; a stop interrupts the
 * run's fiber once; a run removed is out of reach, and its slot is given back.
 */
import { Ids } from "@appexec/api"
import { ExecutionLifecycle, type ExecutionQueue, type ExecutionRecord } from "@appexec/core"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Exit, Fiber } from "effect"
import { Cancellations } from "../src/internal/engine/Cancellations.js"
import * as Runs from "../src/internal/engine/Runs.js"

const executionId = (n: number) =>
  Ids.ExecutionId.make(`0b1c2d3e-4f5a-4b6c-9d7e-8f9a0b1c2d${String(n).padStart(2, "0")}`)

const queued = (n: number): ExecutionRecord.ExecutionRecord => ({
  executionId: executionId(n),
  workflowId: Ids.WorkflowId.make("8a1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d"),
  appId: Ids.AppId.make("3f0c1b8e-2d4a-4e5f-9a6b-7c8d9e0f1a2b"),
  workspaceId: Ids.WorkspaceId.make("3f0c1b8e-2d4a-4e5f-9a6b-7c8d9e0f1a2c"),
  userId: Ids.UserId.make("3f0c1b8e-2d4a-4e5f-9a6b-7c8d9e0f1a2d"),
  status: "queued",
  inputs: {},
  outputs: [ExecutionLifecycle.placeholder("out", "Out")],
  errorMessage: null,
  webhookUrl: null,
  createdAt: 1_000,
  startedAt: null,
  completedAt: null
})

/** The claim of execution `n` with lease token `token`, expiring at `expiresAt`. */
const claimOf = (n: number, token = 1, expiresAt = 60_000): ExecutionQueue.Claim => ({
  execution: queued(n),
  lease: { executionId: executionId(n), workerId: "w", token, attempt: token, counted: token, expiresAt }
})

/** A registry over fresh cancellations, and what it told its watcher. */
const registry = Effect.gen(function*() {
  const cancellations = yield* Cancellations
  const told = { added: 0, armed: [] as Array<number> }
  const runs = Runs.make({
    cancellations,
    watcher: { added: () => (told.added += 1), armed: (at) => told.armed.push(at) }
  })
  return { runs, cancellations, told }
}).pipe(Effect.provide(Cancellations.layer))

describe("Runs", () => {
  it.effect("a cancel stops the run once, interrupting its fiber; a later stop changes nothing", () =>
    Effect.gen(function*() {
      const { cancellations, runs, told } = yield* registry
      const run = runs.add(claimOf(1), () => {})
      expect(told.added).toBe(1)
      const fiber = yield* Effect.fork(Effect.never)
      runs.attach(run, fiber)
      yield* cancellations.signal(run.executionId)
      expect(run.stop).toBe("canceled")
      expect(Exit.isInterrupted(yield* Fiber.await(fiber))).toBe(true)
      runs.stop(run, "timed out")
      expect(run.stop).toBe("canceled")
    }))

  it.effect("a renewal replaces the leases renewed and stops the runs whose lease was lost, not a run added since", () =>
    Effect.gen(function*() {
      const { runs } = yield* registry
      const kept = runs.add(claimOf(1), () => {})
      const lost = runs.add(claimOf(2), () => {})
      const held = runs.leases()
      const later = runs.add(claimOf(3), () => {})
      runs.renewed(held, [{ ...kept.lease, expiresAt: 90_000 }])
      expect([kept.lease.expiresAt, kept.stop]).toEqual([90_000, undefined])
      expect(lost.stop).toBe("lease lost")
      expect(later.stop).toBe(undefined)
    }))

  it.effect("a failed renewal stops only the runs whose lease runs out before the next try", () =>
    Effect.gen(function*() {
      const { runs } = yield* registry
      const soon = runs.add(claimOf(1, 1, 10_000), () => {})
      const later = runs.add(claimOf(2, 1, 50_000), () => {})
      expect(runs.stopExpiring(runs.leases(), 20_000)).toEqual([soon.executionId])
      expect([soon.stop, later.stop]).toEqual(["lease lost", undefined])
    }))

  it.effect("deadlines: the runs past theirs time out, the earliest left is answered, the keeper is told each", () =>
    Effect.gen(function*() {
      const { runs, told } = yield* registry
      const short = runs.add(claimOf(1), () => {})
      const long = runs.add(claimOf(2), () => {})
      const unarmed = runs.add(claimOf(3), () => {})
      runs.arm(short, 1_000, 5_000)
      runs.arm(long, 1_000, 60_000)
      expect(told.armed).toEqual([6_000, 61_000])
      expect(runs.stopDue(5_999, Number.POSITIVE_INFINITY)).toBe(6_000)
      expect(runs.stopDue(6_000, 30_000)).toBe(30_000)
      expect([short.stop, long.stop, unarmed.stop]).toEqual(["timed out", undefined, undefined])
      expect(runs.stopDue(61_000, Number.POSITIVE_INFINITY)).toBe(Number.POSITIVE_INFINITY)
      expect(long.stop).toBe("timed out")
    }))

  it.effect("a run removed gives its slot back once and is out of reach; a second run of its execution is its own", () =>
    Effect.gen(function*() {
      const { cancellations, runs } = yield* registry
      let freed = 0
      const first = runs.add(claimOf(1, 1), () => (freed += 1))
      const second = runs.add(claimOf(1, 2), () => {})
      runs.freeSlot(first)
      runs.remove(first)
      runs.remove(first)
      expect(freed).toBe(1)
      expect([...runs.values()]).toEqual([second])
      expect(runs.leases()).toEqual([second.lease])
      // The cancel reaches the run that holds the execution now.
      yield* cancellations.signal(second.executionId)
      expect([first.stop, second.stop]).toEqual([undefined, "canceled"])
      runs.remove(second)
      expect(runs.size()).toBe(0)
    }))
})
