import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { AppexecClient } from "../src/index.js"
import { instance, serve } from "./ServedInstance.js"

/** A `fetch` that records `METHOD path` of every request. */
const recording = () => {
  const calls: Array<string> = []
  const fetch: typeof globalThis.fetch = (input, init) => {
    calls.push(`${init?.method ?? "GET"} ${new URL(String(input)).pathname}`)
    return globalThis.fetch(input, init)
  }
  return { calls, fetch }
}

describe("inputs of run (docs/api.md#parameter, §9)", () => {
  it.scoped("checks inputs against the app detail before sending, and says what is expected", () =>
    Effect.gen(function*() {
      const served = yield* serve()
      const { calls, fetch } = recording()
      const client = yield* AppexecClient.make({ baseUrl: served.baseUrl, apiKey: served.apiKey, fetch })
      const error = yield* Effect.flip(client.run(served.greetingAppId, { Who: "Ada", tone: "loud" }))
      expect(error._tag).toBe("InvalidInputsError")
      if (error._tag !== "InvalidInputsError") return
      expect(error.source).toBe("local")
      expect(error.problems).toEqual([
        { parameter: "Who", problem: "unknown_parameter", expected: ["who", "tone"] },
        { parameter: "who", problem: "missing_required" },
        { parameter: "tone", problem: "not_an_option", expected: ["warm", "formal"] }
      ])
      expect(error.parameters.map((p) => p.name)).toEqual(["who", "tone"])
      expect(error.message).toContain("'tone' must be one of: warm, formal")
      expect(calls).toEqual([`GET /v1/apps/${served.greetingAppId}`])
    }).pipe(Effect.provide(instance)))

  it.scoped("after a 400 invalid_inputs reads the app detail again and reports the wrong inputs, without retrying", () =>
    Effect.gen(function*() {
      const served = yield* serve()
      const { calls, fetch } = recording()
      const client = yield* AppexecClient.make({ baseUrl: served.baseUrl, apiKey: served.apiKey, fetch })
      const error = yield* Effect.flip(
        client.run(served.greetingAppId, { who: "Ada", tone: "loud" }, { validate: false })
      )
      expect(error).toMatchObject({
        _tag: "InvalidInputsError",
        source: "server",
        problems: [{ parameter: "tone", problem: "not_an_option", expected: ["warm", "formal"] }]
      })
      expect(calls).toEqual([
        `POST /v1/apps/${served.greetingAppId}/executions`,
        `GET /v1/apps/${served.greetingAppId}`
      ])
    }).pipe(Effect.provide(instance)))

  it.scoped("fails with the typed 404 for an app that does not exist", () =>
    Effect.gen(function*() {
      const served = yield* serve()
      const client = yield* AppexecClient.make({ baseUrl: served.baseUrl, apiKey: served.apiKey })
      const error = yield* Effect.flip(client.run("00000000-0000-4000-8000-000000000000", { who: "x" }))
      expect(error).toMatchObject({ _tag: "ApiError", status: 404, code: "not_found" })
    }).pipe(Effect.provide(instance)))
})
