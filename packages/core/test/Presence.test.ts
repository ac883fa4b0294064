/**
 * The presence of a process in the registry of processes (docs/operations.md#the-fleet): its row
 * is written as the instance starts, beaten on every `renewEvery` with its lease end, deleted at
 * once as the instance stops; each beat prunes the rows of processes dead for over a hundred leases.
 */
import { NodeRegistry, ProcessIdentity, ProcessRegistry } from "@appexec/core"
import { TestHarness } from "@appexec/testing"
import { describe, expect, it } from "@effect/vitest"
import { Context, Effect, Exit, Layer, Scope, TestClock } from "effect"
import { PRUNE_AFTER_LEASES } from "../src/internal/engine/Presence.js"

const SECOND = 1_000

/** A process with no worker (the presence alone), beating every second on a lease of 3. */
const harness = TestHarness.layer({
  worker: false,
  process: { name: "worker-a", role: "worker", version: "0.1.0" },
  config: { lease: "3 seconds", renewEvery: "1 second" }
})

describe("presence", () => {
  it.scoped("writes the row at start, beats each renewal, prunes the long dead, deletes it at the stop", () =>
    Effect.gen(function*() {
      const scope = yield* Scope.make()
      const context = yield* Layer.buildWithScope(harness, scope)
      const registry = Context.get(context, ProcessRegistry.ProcessRegistry)
      const identity = (yield* registry.list)[0]!
      expect(identity.processId).toMatch(/^worker-a#[0-9a-f]{6}$/)
      expect(ProcessIdentity.nameOf(identity.processId)).toBe("worker-a")
      const row = (heartbeatAt: number) =>
        new ProcessRegistry.ProcessEntry({
          processId: identity.processId,
          name: "worker-a",
          role: "worker",
          version: "0.1.0",
          startedAt: 0,
          heartbeatAt,
          expiresAt: heartbeatAt + 3 * SECOND,
          // What its worker runs: every type the instance has (no --node-types).
          nodeTypes: Context.get(context, NodeRegistry.NodeRegistry).types
        })
      expect(yield* registry.list).toEqual([row(0)])
      expect(identity.nodeTypes).toContain("text.template")
      // A process dead for longer than PRUNE_AFTER_LEASES, and one dead for less.
      const dead = (id: string, expiresAt: number) =>
        new ProcessRegistry.ProcessEntry({
          processId: id,
          name: id,
          role: "worker",
          version: "0.1.0",
          startedAt: 0,
          heartbeatAt: 0,
          expiresAt
        })
      yield* registry.beat(dead("long-dead", 500))
      yield* registry.beat(dead("just-dead", 2 * SECOND))
      // Beaten every second: the beat at a hundred leases and a second prunes what was dead before a second.
      const now = PRUNE_AFTER_LEASES * 3 * SECOND + SECOND
      yield* TestClock.adjust(now)
      expect((yield* registry.list).map((p) => [p.processId, p.heartbeatAt])).toEqual([
        ["just-dead", 0],
        [identity.processId, now]
      ])
      yield* Scope.close(scope, Exit.void)
      expect((yield* registry.list).map((p) => p.processId)).toEqual(["just-dead"])
    }))
})
