import { describe, expect, it } from "@effect/vitest"
import { Deferred, type Duration, Effect, TestClock } from "effect"
import * as ClaimLoop from "../src/internal/engine/ClaimLoop.js"

/**
 * A queue of `count` items in memory whose claim takes `roundTrip` of virtual time, and whose
 * items each take `runFor` once started; it records what each claim asked for and took, how
 * many items ran at once at most, and which items ran.
 */
const harness = (
  options: {
    readonly count: number
    readonly roundTrip: Duration.DurationInput
    readonly runFor: Duration.DurationInput
  }
) =>
  Effect.gen(function*() {
    let next = 0
    let running = 0
    const seen = { claims: [] as Array<{ asked: number; took: number }>, mostRunning: 0, ran: [] as Array<number> }
    const done = yield* Deferred.make<void>()
    const claim = (n: number) =>
      Effect.zipRight(
        TestClock.adjust(options.roundTrip),
        Effect.sync(() => {
          const took = Array.from({ length: Math.min(n, options.count - next) }, () => next++)
          seen.claims.push({ asked: n, took: took.length })
          return took
        })
      )
    const work = (item: number): ClaimLoop.Work => ({
      effect: Effect.gen(function*() {
        running += 1
        seen.mostRunning = Math.max(seen.mostRunning, running)
        yield* Effect.sleep(options.runFor)
        running -= 1
        seen.ran.push(item)
        if (seen.ran.length === options.count) yield* Deferred.succeed(done, undefined)
      })
    })
    return { seen, done, claim, work }
  })

/** Moves virtual time 1 ms at a time until `done` completes (at most `limit` steps). */
const runUntil = (done: Deferred.Deferred<void>, limit: number) =>
  Effect.gen(function*() {
    for (let i = 0; i < limit && !(yield* Deferred.isDone(done)); i++) yield* TestClock.adjust("1 millis")
    expect(yield* Deferred.isDone(done)).toBe(true)
  })

describe("ClaimLoop", () => {
  it.scoped("short items with work waiting are claimed ahead of the free slots, never run beyond them, each once", () =>
    Effect.gen(function*() {
      const { claim, done, seen, work } = yield* harness({ count: 400, roundTrip: "2 millis", runFor: "1 millis" })
      yield* ClaimLoop.make<number>({
        slots: 8,
        batch: 16,
        claim,
        work,
        annotations: () => ({}),
        idle: () => Effect.never
      })
      yield* runUntil(done, 1_000)
      expect(seen.mostRunning).toBe(8)
      expect([...seen.ran].sort((a, b) => a - b)).toEqual(Array.from({ length: 400 }, (_, i) => i))
      // Once the rate is known, claims ask for more than the slots (items held ahead)…
      expect(seen.claims.some((c) => c.asked > 8)).toBe(true)
      // …so fewer claims than one per slots' worth.
      expect(seen.claims.length).toBeLessThan(400 / 8)
    }))

  it.scoped("a batch given as a function is asked before each claim: no claim asks beyond it", () =>
    Effect.gen(function*() {
      const { claim, done, seen, work } = yield* harness({ count: 400, roundTrip: "2 millis", runFor: "1 millis" })
      // 32 for the first claims, then 12 (as the worker's batch under caps).
      let batch = 32
      yield* ClaimLoop.make<number>({
        slots: 8,
        batch: () => batch,
        claim: (n) =>
          Effect.tap(claim(n), () =>
            Effect.sync(() => {
              if (seen.claims.length === 10) batch = 12
            })),
        work,
        annotations: () => ({}),
        idle: () => Effect.never
      })
      yield* runUntil(done, 1_000)
      expect([...seen.ran].sort((a, b) => a - b)).toEqual(Array.from({ length: 400 }, (_, i) => i))
      const [before, after] = [seen.claims.slice(0, 10), seen.claims.slice(10)]
      // The first claims held items ahead beyond 12, up to 32…
      expect(before.some((c) => c.asked > 12)).toBe(true)
      expect(Math.max(...before.map((c) => c.asked))).toBeLessThanOrEqual(32)
      // …and every later one asked for 12 at most.
      expect(after.length).toBeGreaterThan(0)
      expect(Math.max(...after.map((c) => c.asked))).toBeLessThanOrEqual(12)
    }))

  it.scoped("slow items are never claimed ahead: each claim asks for the free slots only", () =>
    Effect.gen(function*() {
      const { claim, done, seen, work } = yield* harness({ count: 24, roundTrip: "2 millis", runFor: "10 seconds" })
      yield* ClaimLoop.make<number>({
        slots: 4,
        batch: 16,
        claim,
        work,
        annotations: () => ({}),
        idle: () => Effect.never
      })
      for (let i = 0; i < 80 && !(yield* Deferred.isDone(done)); i++) yield* TestClock.adjust("1 seconds")
      expect(yield* Deferred.isDone(done)).toBe(true)
      expect(seen.claims.filter((c) => c.asked > 4)).toEqual([])
      expect(seen.mostRunning).toBe(4)
    }))

  it.scoped("items held ahead when everything is interrupted are started and interrupted, so their consumer gives them back", () =>
    Effect.gen(function*() {
      const { claim, seen, work } = yield* harness({ count: 10_000, roundTrip: "2 millis", runFor: "1 millis" })
      const made: Array<number> = []
      const givenBack: Array<number> = []
      const loop = yield* ClaimLoop.make<number>({
        slots: 4,
        batch: 16,
        claim,
        // As the worker's run: uninterruptible but for its body, and it gives the item back when interrupted.
        work: (item) => {
          made.push(item)
          return {
            effect: Effect.uninterruptibleMask((restore) =>
              restore(work(item).effect).pipe(Effect.onInterrupt(() => Effect.sync(() => givenBack.push(item))))
            )
          }
        },
        annotations: () => ({}),
        idle: () => Effect.never
      })
      // Until some are held: made beyond those running.
      for (let i = 0; i < 200 && made.length - seen.ran.length <= 4; i++) yield* TestClock.adjust("1 millis")
      expect(made.length - seen.ran.length).toBeGreaterThan(4)
      yield* loop.stop
      yield* loop.interruptAll
      // Every item made either ran or was given back; none is left held.
      expect([...seen.ran, ...givenBack].sort((a, b) => a - b)).toEqual([...made].sort((a, b) => a - b))
      expect(yield* loop.size).toBe(0)
    }))

  it.scoped("items that end as they start, giving their slot back on the way, start the held next one after them, never inside them", () =>
    Effect.gen(function*() {
      // The first items take a while (the loop learns to claim ahead), the rest end at once.
      const { claim, done, seen, work } = yield* harness({ count: 300, roundTrip: "2 millis", runFor: "1 millis" })
      let depth = 0
      let deepest = 0
      yield* ClaimLoop.make<number>({
        slots: 2,
        batch: 32,
        claim,
        work: (item, freeSlot) =>
          item < 40 ? work(item) : {
            effect: Effect.sync(() => {
              depth += 1
              deepest = Math.max(deepest, depth)
              seen.ran.push(item)
              freeSlot()
              depth -= 1
            }).pipe(Effect.zipRight(
              Effect.suspend(() => seen.ran.length === 300 ? Deferred.succeed(done, undefined) : Effect.void)
            ))
          },
        annotations: () => ({}),
        idle: () => Effect.never
      })
      yield* runUntil(done, 1_000)
      expect([...seen.ran].sort((a, b) => a - b)).toEqual(Array.from({ length: 300 }, (_, i) => i))
      // Items were held ahead of the slots, and each started after the one that freed its slot.
      expect(seen.claims.some((c) => c.asked > 2)).toBe(true)
      expect(deepest).toBe(1)
    }))
})
