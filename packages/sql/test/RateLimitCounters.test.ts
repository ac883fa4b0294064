import { RateLimitCounters } from "@appexec/sql"
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import type { Compilable } from "kysely"
import { db } from "./support/CompileOnly.js"

describe("RateLimitCounters", () => {
  it("tally: each key's hits, and for each hit how many of its key's come after it", () => {
    const { after, keys } = RateLimitCounters.tally(["a", "b", "a", "a", "c", "b"])
    expect([...keys]).toEqual([["a", 3], ["b", 2], ["c", 1]])
    // A key bumped to `count` hands its hits `count − 2`, `count − 1`, `count` in the order they came.
    expect(after).toEqual([2, 1, 1, 0, 0, 0])
  })

  it.effect("inGroups: one write per group, each item's answer in its place", () =>
    Effect.gen(function*() {
      const writes: Array<ReadonlyArray<string>> = []
      const answers = yield* RateLimitCounters.inGroups(
        ["1a", "2a", "1b", "2b", "1c"],
        (item) => item[0]!,
        (group) => Effect.sync(() => (writes.push(group), group.map((item) => item.toUpperCase())))
      )
      expect(writes).toEqual([["1a", "1b", "1c"], ["2a", "2b"]])
      expect(answers).toEqual(["1A", "2A", "1B", "2B", "1C"])
      const one = yield* RateLimitCounters.inGroups(["x", "y"], () => "same", (group) => Effect.succeed(group))
      expect(one).toEqual(["x", "y"])
    }))

  it.effect("sweeper: one sweep of the windows before the previous one every SWEEP_EVERY hits", () =>
    Effect.gen(function*() {
      const swept: Array<Compilable<unknown>> = []
      const sweep = RateLimitCounters.sweeper(db, (_, query) => Effect.sync(() => swept.push(query)))
      yield* sweep(RateLimitCounters.SWEEP_EVERY - 1, 60_000)
      expect(swept).toHaveLength(0)
      yield* sweep(1, 120_000)
      expect(swept.map((query) => query.compile().parameters)).toEqual([[120_000]])
      yield* sweep(RateLimitCounters.SWEEP_EVERY - 1, 180_000)
      expect(swept).toHaveLength(1)
    }))
})
