import { RateLimiter, RateLimitStore } from "@appexec/core"
import { describe, expect, it } from "@effect/vitest"
import { Duration, Effect, FastCheck as fc, TestClock } from "effect"

const policy = { limit: 3, windowMs: 60_000 }

describe("rate limiter", () => {
  it.effect("allows `limit` requests per sliding window, then refuses until its Retry-After has passed", () =>
    Effect.gen(function*() {
      yield* TestClock.adjust("10 seconds")
      const decisions = []
      for (let i = 0; i < 4; i++) decisions.push(yield* RateLimiter.consume("1.2.3.4", policy))
      expect(decisions.map((d) => [d.allowed, d.remaining])).toEqual([
        [true, 2],
        [true, 1],
        [true, 0],
        [false, 0]
      ])
      // 4 hits in this window, the refused one included: no room before the next window, 50 s from now.
      expect(decisions[3]).toMatchObject({ limit: 3, resetSeconds: 50 })
      // Another client has its own counter.
      expect((yield* RateLimiter.consume("5.6.7.8", policy)).remaining).toBe(2)
      // One second early, still refused.
      yield* TestClock.adjust("49 seconds")
      expect((yield* RateLimiter.consume("1.2.3.4", policy)).allowed).toBe(false)
      // At Retry-After: the previous window counts at most `limit − 1` (2 here), so one fits.
      yield* TestClock.adjust("1 second")
      expect((yield* RateLimiter.consume("1.2.3.4", policy)).allowed).toBe(true)
      const refused = yield* RateLimiter.consume("1.2.3.4", policy)
      expect(refused).toMatchObject({ allowed: false, resetSeconds: 60 })
      yield* TestClock.adjust("60 seconds")
      expect((yield* RateLimiter.consume("1.2.3.4", policy)).allowed).toBe(true)
    }).pipe(Effect.provide(RateLimitStore.layerMemory())))

  it.effect("does not let twice the limit through across a window boundary", () =>
    Effect.gen(function*() {
      const limit = { limit: 100, windowMs: 60_000 }
      yield* TestClock.adjust("59500 millis")
      let allowed = 0
      for (let i = 0; i < 100; i++) if ((yield* RateLimiter.consume("burst", limit)).allowed) allowed++
      yield* TestClock.adjust("1 second")
      for (let i = 0; i < 100; i++) if ((yield* RateLimiter.consume("burst", limit)).allowed) allowed++
      // A fixed window would have let all 200 through within one second; the previous window's
      // share counts at most `limit − 1`, which lets one more through.
      expect(allowed).toBe(101)
    }).pipe(Effect.provide(RateLimitStore.layerMemory())))

  it("decides from the weighted previous window", () => {
    // Half the window elapsed: half the previous window's 10 hits (counted as 9, `limit − 1`) still count.
    const decision = RateLimiter.decide({ limit: 10, windowMs: 1000 }, 1500, 1000, { current: 5, previous: 10 })
    expect(decision).toEqual({ allowed: true, limit: 10, remaining: 0, resetSeconds: 1 })
    const refused = RateLimiter.decide({ limit: 10, windowMs: 60_000 }, 30_000, 0, { current: 6, previous: 10 })
    // 4.5 + 6 > 10; one more fits when the previous window's share (of 9) is 3: at 40 s, 10 s from now.
    expect(refused).toEqual({ allowed: false, limit: 10, remaining: 0, resetSeconds: 10 })
  })

  it.effect.prop(
    "Retry-After never exceeds the window, and a request sent after waiting exactly it is allowed",
    {
      limit: fc.constantFrom(1, 2, 3, 10, 100),
      windowSeconds: fc.constantFrom(1, 10, 60),
      steps: fc.array(
        fc.record({
          waitMs: fc.integer({ min: 0, max: 150_000 }),
          burst: fc.integer({ min: 1, max: 120 }),
          thenRetry: fc.boolean()
        }),
        { minLength: 1, maxLength: 8 }
      )
    },
    ({ limit, steps, windowSeconds }) =>
      Effect.gen(function*() {
        const policy = { limit, windowMs: windowSeconds * 1000 }
        for (const { burst, thenRetry, waitMs } of steps) {
          yield* TestClock.adjust(Duration.millis(waitMs))
          let last: RateLimiter.RateLimitDecision | undefined
          const resets = new Set<number>()
          for (let i = 0; i < burst; i++) {
            last = yield* RateLimiter.consume("client", policy)
            resets.add(last.resetSeconds)
          }
          expect(Math.min(...resets)).toBeGreaterThanOrEqual(1)
          expect(Math.max(...resets)).toBeLessThanOrEqual(windowSeconds)
          if (thenRetry && last !== undefined && !last.allowed) {
            yield* TestClock.adjust(Duration.seconds(last.resetSeconds))
            expect((yield* RateLimiter.consume("client", policy)).allowed).toBe(true)
          }
        }
      }).pipe(Effect.provide(RateLimitStore.layerMemory())),
    { fastCheck: { numRuns: 50 } }
  )
})
