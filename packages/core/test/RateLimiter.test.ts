import { RateLimiter } from "@appexec/core"
import { MemoryRateLimitStore } from "@appexec/testing"
import { describe, expect, it } from "@effect/vitest"
import { Effect, TestClock } from "effect"

const policy = { limit: 3, windowMs: 60_000 }

describe("rate limiter", () => {
  it.effect("allows `limit` requests per window, then refuses until the window resets", () =>
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
      expect(decisions[3]).toMatchObject({ limit: 3, resetSeconds: 50 })
      // Another client has its own counter.
      expect((yield* RateLimiter.consume("5.6.7.8", policy)).remaining).toBe(2)
      yield* TestClock.adjust("50 seconds")
      const fresh = yield* RateLimiter.consume("1.2.3.4", policy)
      expect(fresh).toEqual({ allowed: true, limit: 3, remaining: 2, resetSeconds: 60 })
    }).pipe(Effect.provide(MemoryRateLimitStore.layer)))
})
