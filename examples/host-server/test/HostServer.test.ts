/**
 * The host-server example: the host's own routes still answer, and appexec answers under /api,
 * end to end (list, start, poll until completed).
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { startHost } from "../main.mjs"

const json = (url: string, init: RequestInit = {}) =>
  Effect.promise(async () => {
    const response = await fetch(url, init)
    return { status: response.status, headers: response.headers, body: (await response.json()) as Record<string, any> }
  })

describe("host-server example", () => {
  it.live("serves the host's routes and appexec under /api", () =>
    Effect.gen(function*() {
      const host = yield* Effect.acquireRelease(
        Effect.promise(() => startHost(0)),
        (h) => Effect.promise(() => h.close())
      )
      const health = yield* Effect.promise(() => fetch(`${host.baseUrl}/health`).then((r) => r.text()))
      expect(health).toBe("ok\n")
      const headers = { "x-api-key": host.key }
      const apps = yield* json(`${host.baseUrl}/api/v1/apps`, { headers })
      expect(apps.status).toBe(200)
      expect(apps.headers.get("ratelimit-limit")).toBe("100")
      const greeting = apps.body.data.find((a: { name: string }) => a.name === "Greeting")
      const started = yield* json(`${host.baseUrl}/api/v1/apps/${greeting.appId}/executions`, {
        method: "POST",
        headers: { ...headers, "content-type": "application/json" },
        body: JSON.stringify({ inputs: { who: "host" } })
      })
      expect(started.status).toBe(202)
      const executionId: string = started.body.data.executionId
      yield* Effect.promise(() => host.awaitExecution(executionId))
      const done = yield* json(`${host.baseUrl}/api/v1/executions/${executionId}`, { headers })
      expect(done.body.data.status).toBe("completed")
      expect(done.body.data.outputs[0].value).toBe("Hello host, in a warm tone.")
      const outside = yield* Effect.promise(() => fetch(`${host.baseUrl}/v1/apps`, { headers }).then((r) => r.text()))
      expect(outside).toContain("The host's own page")
      expect((yield* json(`${host.baseUrl}/api/v1/nope`, { headers })).status).toBe(404)
    }).pipe(Effect.scoped))
})
