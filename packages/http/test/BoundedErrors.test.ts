/**
 * Error answers stay small whatever the request: hostile bodies, keys, paths and queries over a
 * real socket each get the error body, under 64 KB.
 */
import { HttpClientRequest } from "@effect/platform"
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import * as ErrorAnswers from "../src/internal/ErrorAnswers.js"
import { errorOf, seed, send, stack } from "./fixtures.js"

const post = (path: string, key: string, body: string) =>
  send(
    HttpClientRequest.post(path).pipe(
      HttpClientRequest.setHeader("x-api-key", key),
      HttpClientRequest.bodyText(body, "application/json")
    )
  )

const sizeOf = (body: unknown) => new TextEncoder().encode(JSON.stringify(body)).byteLength

describe("bounded error answers", () => {
  it.scoped("a start request with 60,000 unknown input names gets a small invalid_inputs answer", () =>
    Effect.gen(function*() {
      const { alice, echo } = yield* seed
      const inputs: Record<string, string> = {}
      for (let i = 0; i < 60_000; i++) inputs[`n${i}`] = ""
      const body = JSON.stringify({ inputs })
      expect(body.length).toBeGreaterThan(700_000)
      const res = yield* post(`/v1/apps/${echo.appId}/executions`, alice.key, body)
      expect(res.status).toBe(400)
      const error = errorOf(res.body)
      expect(error.code).toBe("invalid_inputs")
      expect(error.details).toHaveLength(20)
      expect(error.message).toContain("60001 inputs are invalid (the first 20 listed)")
      expect(sizeOf(res.body)).toBeLessThan(8 * 1024)
    }).pipe(Effect.provide(stack())))

  it.scoped("long keys, paths, queries and headers never make an error body of 64 KB", () =>
    Effect.gen(function*() {
      const { alice, echo } = yield* seed
      const long = "\u0001é".repeat(20_000)
      const answers = [
        yield* post(`/v1/apps/${echo.appId}/executions`, alice.key, JSON.stringify({ inputs: { [long]: long } })),
        yield* post(`/v1/apps/${echo.appId}/executions?webhook=${"x".repeat(8_000)}`, alice.key, "{\"inputs\":{}}"),
        yield* send(HttpClientRequest.get(`/v1/${"é".repeat(2_500)}`)),
        yield* send(HttpClientRequest.get(`/v1/apps?limit=${"9".repeat(5_000)}&search=${"s".repeat(5_000)}`)),
        yield* post(`/v1/apps/${echo.appId}/executions`, alice.key, `{"inputs":${"[".repeat(100_000)}`)
      ]
      for (const res of answers) {
        expect(res.status).toBeGreaterThanOrEqual(400)
        expect(res.status).toBeLessThan(500)
        expect(typeof errorOf(res.body).code).toBe("string")
        expect(sizeOf(res.body)).toBeLessThan(ErrorAnswers.MAX_ERROR_BODY_BYTES)
      }
    }).pipe(Effect.provide(stack())))

  it("cuts a long message and long details at the last line of defence", () => {
    const response = ErrorAnswers.answer(400, {
      code: "invalid_request",
      message: "\u0000".repeat(100_000),
      details: Array.from({ length: 10_000 }, (_, i) => ({ i, text: "\u0000".repeat(100) }))
    })
    const text = typeof response.body === "string" ? response.body : ""
    expect(new TextEncoder().encode(text).byteLength).toBeLessThan(ErrorAnswers.MAX_ERROR_BODY_BYTES)
    const parsed = JSON.parse(text) as { error: { details: Array<unknown> } }
    expect(parsed.error.details.length).toBeGreaterThan(0)
  })
})
