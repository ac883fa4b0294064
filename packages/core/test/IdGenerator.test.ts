import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { IdGenerator, timeOrderedUuid } from "../src/IdGenerator.js"

const V7 = /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/

/** The Unix milliseconds of a version 7 UUID (its first 48 bits). */
const millisOf = (id: string) => Number.parseInt(id.slice(0, 8) + id.slice(9, 13), 16)

describe("timeOrderedUuid", () => {
  it("makes version 7 UUIDs that carry the time they were made", () => {
    const before = Date.now()
    const id = timeOrderedUuid()
    const after = Date.now()
    expect(id).toMatch(V7)
    expect(millisOf(id)).toBeGreaterThanOrEqual(before)
    // A counter overflow within a millisecond moves it on by one at most per 2,048 ids.
    expect(millisOf(id)).toBeLessThanOrEqual(after + 1)
  })

  it("makes ids that increase strictly, many within one millisecond, each different", () => {
    // Far more than one millisecond's counter holds: the overflow moves the millisecond on.
    const ids = Array.from({ length: 20_000 }, () => timeOrderedUuid())
    const outOfOrder = ids.filter((id, i) => i > 0 && !(id > ids[i - 1]!))
    expect(outOfOrder).toEqual([])
    expect(new Set(ids).size).toBe(ids.length)
    expect(ids.filter((id) => !V7.test(id))).toEqual([])
    // They did span more than one millisecond's counter.
    expect(millisOf(ids.at(-1)!)).toBeGreaterThan(millisOf(ids[0]!))
  })

  it("spreads its 62 random bits: ids made in the same millisecond differ past the counter", () => {
    const tails = new Set(Array.from({ length: 1_000 }, () => timeOrderedUuid().slice(19)))
    expect(tails.size).toBe(1_000)
  })

  it.effect("is the uuid of IdGenerator.random", () =>
    Effect.gen(function*() {
      const ids = yield* IdGenerator
      const first = yield* ids.uuid
      const second = yield* ids.uuid
      expect(first).toMatch(V7)
      expect(second > first).toBe(true)
    }).pipe(Effect.provide(IdGenerator.random)))
})
