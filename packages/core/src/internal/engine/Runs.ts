/**
 * The runs of a worker, by execution id: the one module that makes, changes and removes a run (as
 * `cluster`'s entity manager owns its entities). The claim loop adds a run as it is claimed; the
 * run's fiber arms its deadline and removes it as it ends; the lease keeper, the cancels and the
 * drain ask this registry, and tell it what they found (leases renewed or lost, deadlines due, a
 * cancel): only it writes a run's lease, its stop and its deadline, and only it interrupts a run's
 * fiber.
 */
import type { ExecutionId } from "@appexec/api/Ids"
import { type Fiber, FiberId } from "effect"
import type { Claim, Lease } from "../../ExecutionQueue.js"
import type { Cancellations } from "./Cancellations.js"

/** Why a run was told to stop before its workflow ended. */
export type StopReason = "canceled" | "timed out" | "lease lost"

/** One run of a worker, from its claim to its end, as the registry keeps it. */
export interface Run {
  readonly executionId: ExecutionId
  /** The claim that took it: the execution as found, and its lease. */
  readonly claim: Claim
  /** The lease as last renewed. */
  readonly lease: Lease
  /** Why the run was told to stop, once it was. */
  readonly stop: StopReason | undefined
  /** When the run times out (epoch ms); never until its workflow starts (`arm`). */
  readonly deadline: number
}

/** A run with what only the registry touches. */
interface Entry {
  readonly executionId: ExecutionId
  readonly claim: Claim
  lease: Lease
  stop: StopReason | undefined
  deadline: number
  /** The run's fiber: what a stop interrupts (the run lets it take effect only while its workflow runs). */
  fiber: Fiber.RuntimeFiber<unknown, unknown> | undefined
  /** Gives the run's slot back; set to nothing once it did. */
  freeSlot: (() => void) | undefined
  /** Forgets the run's cancel. */
  readonly unregister: () => void
}

/** The runs of one worker. */
export interface Runs {
  /** Makes the run of a claim, holding `freeSlot`, and registers its cancel. Synchronous. */
  readonly add: (claim: Claim, freeSlot: () => void) => Run
  /** Tells the registry the run's fiber, which a stop interrupts (one that has ended is not kept). */
  readonly attach: (run: Run, fiber: Fiber.RuntimeFiber<unknown, unknown>) => void
  /** Sets the run's deadline: `timeoutMs` from `now`. */
  readonly arm: (run: Run, now: number, timeoutMs: number) => void
  /** Gives the run's slot back (once) while it still has its last write to make. */
  readonly freeSlot: (run: Run) => void
  /** Removes the run as it ends: its cancel forgotten, its slot given back if it was not. */
  readonly remove: (run: Run) => void
  /** Tells a run to stop: interrupts its fiber (its workflow). Once per run; nothing once it ended. */
  readonly stop: (run: Run, reason: StopReason) => void
  /** How many runs there are. */
  readonly size: () => number
  /** The runs now, oldest claim first. */
  readonly values: () => IterableIterator<Run>
  /** The leases of every run now (what a renewal renews). */
  readonly leases: () => Array<Lease>
  /**
   * The answer of a renewal of `held` (from `leases`): the leases renewed replace the runs' own,
   * and the runs of the others, still here with that lease, stop (`lease lost`).
   */
  readonly renewed: (held: ReadonlyArray<Lease>, renewed: ReadonlyArray<Lease>) => void
  /**
   * The runs of `held` (from `leases`) whose lease runs out by `by`, still here with that lease,
   * stopped (`lease lost`): a renewal failed, and they would run beside a second copy. Their ids.
   */
  readonly stopExpiring: (held: ReadonlyArray<Lease>, by: number) => Array<ExecutionId>
  /** Stops the runs whose deadline is `at` or before (`timed out`); the earliest deadline left, or `never`. */
  readonly stopDue: (at: number, never: number) => number
}

/** Who watches the runs (the lease keeper): told of every run added and every deadline armed. */
export interface Watcher {
  /** A run was added (the keeper starts renewing if it was not). Synchronous. */
  readonly added: () => void
  /** A run's deadline was armed, at `at` (the keeper wakes then if that is sooner than it planned). */
  readonly armed: (at: number) => void
}

/** A registry that tells `watcher` of its runs and registers every run's cancel with `cancellations`. */
export const make = (options: {
  readonly cancellations: Cancellations["Type"]
  readonly watcher: Watcher
}): Runs => {
  const { cancellations, watcher } = options
  /** Every run, by itself: a run claimed again here while its previous run ends is a run of its own. */
  const entries = new Map<Run, Entry>()
  const stopEntry = (entry: Entry, reason: StopReason) => {
    if (entry.stop !== undefined) return
    entry.stop = reason
    entry.fiber?.unsafeInterruptAsFork(FiberId.none)
  }
  /** Gives the entry's slot back, once. */
  const freeSlotOf = (entry: Entry) => {
    const freeSlot = entry.freeSlot
    entry.freeSlot = undefined
    freeSlot?.()
  }
  /** Each run that still holds a lease of `held` (as `leases` answered it). */
  const holding = (held: ReadonlyArray<Lease>, f: (entry: Entry) => void) => {
    const was = new Set(held)
    for (const entry of entries.values()) if (was.has(entry.lease)) f(entry)
  }
  return {
    add: (claim, freeSlot) => {
      const entry: Entry = {
        executionId: claim.execution.executionId,
        claim,
        lease: claim.lease,
        stop: undefined,
        deadline: Number.POSITIVE_INFINITY,
        fiber: undefined,
        freeSlot,
        unregister: cancellations.unsafeRegister(claim.execution.executionId, () => stopEntry(entry, "canceled"))
      }
      entries.set(entry, entry)
      watcher.added()
      return entry
    },
    attach: (run, fiber) => {
      const entry = entries.get(run)
      // A fiber that ended as it was forked (its outcome handed over) is not kept: nothing stops it.
      if (entry !== undefined && fiber.unsafePoll() === null) entry.fiber = fiber
    },
    arm: (run, now, timeoutMs) => {
      const entry = entries.get(run)
      if (entry === undefined) return
      entry.deadline = now + timeoutMs
      watcher.armed(entry.deadline)
    },
    freeSlot: (run) => {
      const entry = entries.get(run)
      if (entry !== undefined) freeSlotOf(entry)
    },
    remove: (run) => {
      const entry = entries.get(run)
      if (entry === undefined) return
      entries.delete(run)
      entry.unregister()
      freeSlotOf(entry)
    },
    stop: (run, reason) => {
      const entry = entries.get(run)
      if (entry !== undefined) stopEntry(entry, reason)
    },
    size: () => entries.size,
    values: () => entries.keys(),
    leases: () => {
      const leases: Array<Lease> = []
      for (const entry of entries.values()) leases.push(entry.lease)
      return leases
    },
    renewed: (held, renewed) => {
      const byId = new Map<ExecutionId, Lease>()
      for (const lease of renewed) byId.set(lease.executionId, lease)
      holding(held, (entry) => {
        const lease = byId.get(entry.executionId)
        if (lease !== undefined && lease.token === entry.lease.token) entry.lease = lease
        else stopEntry(entry, "lease lost")
      })
    },
    stopExpiring: (held, by) => {
      const stopped: Array<ExecutionId> = []
      holding(held, (entry) => {
        if (entry.lease.expiresAt > by) return
        stopped.push(entry.executionId)
        stopEntry(entry, "lease lost")
      })
      return stopped
    },
    stopDue: (at, never) => {
      let earliest = never
      for (const entry of entries.values()) {
        if (entry.stop !== undefined) continue
        if (entry.deadline <= at) stopEntry(entry, "timed out")
        else if (entry.deadline < earliest) earliest = entry.deadline
      }
      return earliest
    }
  }
}
