/**
 * The scheduler of streamed answers (`internal/SlicedScheduler.ts`): tasks scheduled together run
 * a slice a turn of the event loop, and what else the loop has to do (a socket's data, a request's
 * answer) runs between two slices; fibers on it run as on any scheduler.
 */
import { describe, expect, it } from "@effect/vitest"
import { Deferred, Effect, Fiber } from "effect"
import * as SlicedScheduler from "../src/internal/SlicedScheduler.js"

/** Resolves after `turns` turns of the event loop's check phase. */
const turns = (count: number) =>
  new Promise<void>((resolve) => {
    const next = (left: number) => (left === 0 ? resolve() : setImmediate(() => next(left - 1)))
    next(count)
  })

describe("SlicedScheduler", () => {
  it("runs a slice of its tasks a turn, with the loop's other work in between", async () => {
    const scheduler = SlicedScheduler.make(2)
    const ran: Array<string> = []
    for (let i = 1; i <= 5; i++) scheduler.scheduleTask(() => ran.push(`task ${i}`), 0)
    setImmediate(() => ran.push("other work"))
    await turns(4)
    expect(ran).toEqual(["task 1", "task 2", "other work", "task 3", "task 4", "task 5"])
    // Scheduled again once drained: it runs again.
    scheduler.scheduleTask(() => ran.push("task 6"), 0)
    await turns(2)
    expect(ran.at(-1)).toBe("task 6")
  })

  it.live("100 fibers woken together on it run a slice a turn, and each completes", () =>
    Effect.gen(function*() {
      const scheduler = SlicedScheduler.make(10)
      const gate = yield* Deferred.make<void>()
      let done = 0
      const fibers = yield* Effect.forEach(
        Array.from({ length: 100 }, (_, i) => i),
        () =>
          Effect.fork(
            Effect.withScheduler(Effect.zipRight(Deferred.await(gate), Effect.sync(() => void (done += 1))), scheduler)
          )
      )
      yield* Effect.yieldNow()
      yield* Deferred.succeed(gate, undefined)
      // One turn later, the first slice only has run.
      yield* Effect.promise(() => turns(1))
      expect(done).toBe(10)
      yield* Effect.forEach(fibers, Fiber.join)
      expect(done).toBe(100)
    }))
})
