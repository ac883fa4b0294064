import { RateLimiter } from "@appexec/core"
import { MemoryRateLimitStore } from "@appexec/testing"
import { describe, expect, it } from "@effect/vitest"
import { Effect, TestClock } from "effect"

const policy = { limit: 3, windowMs: 60_000 }

describe("rate limiter", () => {
  it.effect("allows `limit` requests per sliding window, then refuses until enough of it has slid out", () =>
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
      // 4 hits in the window: at 90 s half of them have slid out, room for one: 80 s from now.
      expect(decisions[3]).toMatchObject({ limit: 3, resetSeconds: 80 })
      // Another client has its own counter.
      expect((yield* RateLimiter.consume("5.6.7.8", policy)).remaining).toBe(2)
      // The next fixed window has begun, but the last minute still holds 4 requests.
      yield* TestClock.adjust("50 seconds")
      expect((yield* RateLimiter.consume("1.2.3.4", policy)).allowed).toBe(false)
      yield* TestClock.adjust("60 seconds")
      const fresh = yield* RateLimiter.consume("1.2.3.4", policy)
      expect(fresh.allowed).toBe(true)
    }).pipe(Effect.provide(MemoryRateLimitStore.layer)))

  it.effect("does not let twice the limit through across a window boundary", () =>
    Effect.gen(function*() {
      const limit = { limit: 100, windowMs: 60_000 }
      yield* TestClock.adjust("59500 millis")
      let allowed = 0
      for (let i = 0; i < 100; i++) if ((yield* RateLimiter.consume("burst", limit)).allowed) allowed++
      yield* TestClock.adjust("1 second")
      for (let i = 0; i < 100; i++) if ((yield* RateLimiter.consume("burst", limit)).allowed) allowed++
      // A fixed window would have let all 200 through within one second.
      expect(allowed).toBe(100)
    }).pipe(Effect.provide(MemoryRateLimitStore.layer)))

  it("decides from the weighted previous window", () => {
    // Half the window elapsed: half the previous window's 10 hits still count.
    const decision = RateLimiter.decide({ limit: 10, windowMs: 1000 }, 1500, 1000, { current: 5, previous: 10 })
    expect(decision).toEqual({ allowed: true, limit: 10, remaining: 0, resetSeconds: 1 })
    const refused = RateLimiter.decide({ limit: 10, windowMs: 60_000 }, 30_000, 0, { current: 6, previous: 10 })
    // 5 + 6 = 11 > 10; one more fits when the previous window's share is 3: at 42 s, 12 s from now.
    expect(refused).toEqual({ allowed: false, limit: 10, remaining: 0, resetSeconds: 12 })
  })
})
