import { describe, expect, it } from "@effect/vitest"
import { RetryPolicy } from "../src/index.js"

const response = (status: number, headers: Record<string, string> = {}): RetryPolicy.Outcome => ({
  _tag: "Response",
  status,
  header: (name) => headers[name]
})

describe("RetryPolicy.decide (docs/api.md#errors)", () => {
  const now = Date.parse("2026-11-22T10:00:00Z")

  it("waits for Retry-After on a 429, for reads and starts alike", () => {
    expect(RetryPolicy.decide({}, "read", 0, response(429, { "retry-after": "7" }), now, 0.5)).toEqual({
      reason: "rate_limited",
      delayMs: 7_000
    })
    expect(RetryPolicy.decide({}, "start", 0, response(429, { "retry-after": "7" }), now, 0.5)).toEqual({
      reason: "rate_limited",
      delayMs: 7_000
    })
  })

  it("reads Retry-After as an HTTP date, then falls back to RateLimit-Reset", () => {
    const date = new Date(now + 12_000).toUTCString()
    expect(RetryPolicy.decide({}, "read", 0, response(429, { "retry-after": date }), now, 0)?.delayMs).toBe(12_000)
    expect(RetryPolicy.decide({}, "read", 0, response(429, { "ratelimit-reset": "30" }), now, 0)?.delayMs).toBe(30_000)
  })

  it("gives up on a rate-limit wait longer than allowed, and after the last retry", () => {
    expect(RetryPolicy.decide({ maxRateLimitWaitMs: 5_000 }, "read", 0, response(429, { "retry-after": "6" }), now, 0))
      .toBeUndefined()
    expect(RetryPolicy.decide({ maxRetries: 2 }, "read", 2, response(429, { "retry-after": "1" }), now, 0))
      .toBeUndefined()
  })

  it("retries 500 on reads with bounded, growing backoff, never on starts", () => {
    const delays = [0, 1, 2, 3, 4, 5].map((n) =>
      RetryPolicy.decide({ maxRetries: 10 }, "read", n, response(500), now, 1)?.delayMs
    )
    expect(delays).toEqual([500, 1_000, 2_000, 4_000, 8_000, 8_000])
    expect(RetryPolicy.decide({}, "read", 0, response(500), now, 0)?.delayMs).toBe(250)
    expect(RetryPolicy.decide({}, "start", 0, response(500), now, 0)).toBeUndefined()
  })

  it("never retries 400, 401, 403, 404 or a success", () => {
    for (const status of [200, 202, 400, 401, 403, 404, 413]) {
      expect(RetryPolicy.decide({}, "read", 0, response(status), now, 0)).toBeUndefined()
      expect(RetryPolicy.decide({}, "start", 0, response(status), now, 0)).toBeUndefined()
    }
  })

  it("retries a start after a network failure only when it was never sent", () => {
    expect(RetryPolicy.decide({}, "start", 0, { _tag: "NoResponse", neverSent: false }, now, 0)).toBeUndefined()
    expect(RetryPolicy.decide({}, "start", 0, { _tag: "NoResponse", neverSent: true }, now, 0)?.reason).toBe("network")
    expect(RetryPolicy.decide({}, "read", 0, { _tag: "NoResponse", neverSent: false }, now, 0)?.reason).toBe("network")
  })
})
