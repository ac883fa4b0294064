/**
 * The ComfyUI servers as the operator views show them (`ComfyuiServers.layer`), against the
 * protocol-faithful test server: a server that answers is idle, then busy with the execution
 * whose prompt it runs; one that does not answer is unreachable with why; an authenticating
 * proxy's 401 is an answer; credentials in a configured URL are never shown, in the URL or the
 * message; an unreachable server is down in the pool, shown with since when.
 */
import { BackendServers } from "@appexec/core"
import { ComfyuiServers, Workflow } from "@appexec/nodes-comfyui"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Layer } from "effect"
import * as ComfyServer from "./support/ComfyServer.js"
import { layer, start } from "./support/Instance.js"
import { app, textToImage } from "./support/Workflows.js"

const list = Effect.flatMap(BackendServers.BackendServers, (servers) => servers.list)

describe("ComfyuiServers", () => {
  it.live("idle, busy with the execution it runs, unreachable; never a credential shown", () =>
    Effect.gen(function*() {
      const a = yield* ComfyServer.make({ steps: 2 })
      const proxied = yield* ComfyServer.make({ auth: "Bearer proxy-token-5f1c" })
      const stopped = yield* ComfyServer.make()
      yield* Effect.promise(() => stopped.close())
      const secretUrl = stopped.url.replace("http://", "http://operator:hunter2@")
      a.hold()
      yield* Effect.gen(function*() {
        const idle = yield* list
        expect(idle.map((s) => [s.url, s.state, s.capacity, s.executions])).toEqual([
          [a.url, "idle", 1, []],
          [proxied.url, "idle", 1, []],
          [stopped.url, "unreachable", 1, []]
        ])
        expect(idle[2]!.error).toContain("did not answer")
        // The look marked it down in the pool: since when is shown, and the pool holds it down.
        expect(idle.map((s) => s.unreachableSince === null)).toEqual([true, true, false])
        expect(Date.parse(idle[2]!.unreachableSince!)).toBeLessThanOrEqual(Date.now())
        expect((yield* list)[2]!.unreachableSince).toBe(idle[2]!.unreachableSince)
        expect(JSON.stringify(idle)).not.toContain("hunter2")

        const { executionId } = yield* start(app(textToImage), { prompt: "held" })
        const promptId = Workflow.promptIdOf(executionId, "render")
        yield* Effect.promise(() => a.until((s) => s.stateOf(promptId) === "running"))
        expect((yield* list)[0]).toMatchObject({ state: "busy", executions: [executionId], error: null })
        a.resume()
      }).pipe(
        Effect.provide(ComfyuiServers.layer.pipe(Layer.provideMerge(layer([a.url, proxied.url, secretUrl]))))
      )
    }).pipe(Effect.scoped))

  it("shows a URL without user, password, query or trailing slash", () => {
    expect(BackendServers.shownUrl("http://operator:hunter2@gpu-1:8188/comfy/?token=x#y")).toBe(
      "http://gpu-1:8188/comfy"
    )
    expect(BackendServers.shownUrl("https://gpu-2.internal")).toBe("https://gpu-2.internal")
  })
})
