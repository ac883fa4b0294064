/**
 * The ComfyUI servers in the operator views of `appexec serve --comfyui A,B --admin-port 0`:
 * `GET /operator/backends` of the admin port shows each configured server, B (stopped) as
 * `unreachable` with why and since when (the log saying it left the pool), A as `busy` with the
 * execution it runs while a prompt of this process is held on it, then `idle` once it is done; a
 * serve without `--comfyui` shows none.
 */
import { Workflow } from "@appexec/nodes-comfyui"
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import * as ComfyServer from "../../nodes-comfyui/test/support/ComfyServer.js"
import { appsDir, comfyuiApi, json } from "./support/ComfyuiApps.js"
import { startServe, tempDataDir } from "./support/ServeProcess.js"

interface Shown {
  readonly kind: string
  readonly url: string
  readonly state: string
  readonly capacity: number
  readonly executions: ReadonlyArray<string>
  readonly error: string | null
  readonly unreachableSince: string | null
}

describe("the ComfyUI servers in the operator views", () => {
  it.scopedLive(
    "one stopped is unreachable, one running a prompt is busy with its execution, then idle",
    () =>
      Effect.gen(function*() {
        const a = yield* ComfyServer.make({ steps: 3 })
        const b = yield* ComfyServer.make()
        yield* Effect.promise(() => b.close())
        a.hold()
        const serve = yield* startServe(yield* tempDataDir, [
          "--apps",
          yield* appsDir,
          "--comfyui",
          `${a.url}*2,${b.url}`,
          "--admin-port",
          "0"
        ])
        const [, adminUrl] = yield* serve.waitFor(/Metrics: (http:\/\/127\.0\.0\.1:\d+)\/metrics/, "stderr")
        const backends = Effect.map(json(`${adminUrl}/operator/backends`), (answer) =>
          answer.data as unknown as Array<Shown>)

        const idle = yield* backends
        expect(idle.map((s) => [s.url, s.state, s.capacity, s.executions])).toEqual([
          [a.url, "idle", 2, []],
          [b.url, "unreachable", 1, []]
        ])
        expect(idle[1]!.error).toContain(`the ComfyUI server ${b.url.slice("http://".length)} did not answer`)
        expect(idle.every((s) =>
          s.kind === "comfyui"
        )).toBe(true)
        // The look marked B down in the pool: since when, and the log says so once, without credentials.
        expect(idle.map((s) => s.unreachableSince === null)).toEqual([true, false])
        expect(Date.parse(idle[1]!.unreachableSince!)).toBeGreaterThan(0)
        yield* serve.waitFor(new RegExp(`ComfyUI server ${b.url} is unreachable`), "stderr", "10 seconds")

        const { headers, start } = yield* comfyuiApi(serve)
        const id = yield* start({ prompt: "a harbour at night" })
        const promptId = Workflow.promptIdOf(id, "render")
        yield* Effect.promise(() => a.until((s) => s.stateOf(promptId) === "running"))
        const busy = yield* backends
        expect(busy.map((s) => [s.url, s.state, s.executions])).toEqual([
          [a.url, "busy", [id]],
          [b.url, "unreachable", []]
        ])

        a.resume()
        const done = yield* json(`${serve.baseUrl}/v1/executions/${id}`, { headers: { ...headers, prefer: "wait=30" } })
        expect(done.data["status"]).toBe("completed")
        expect((yield* backends).map((s) => s.state)).toEqual(["idle", "unreachable"])
      }),
    60_000
  )

  it.scopedLive("a serve without --comfyui shows none", () =>
    Effect.gen(function*() {
      const serve = yield* startServe(yield* tempDataDir, ["--admin-port", "0"])
      const [, adminUrl] = yield* serve.waitFor(/Metrics: (http:\/\/127\.0\.0\.1:\d+)\/metrics/, "stderr")
      expect((yield* json(`${adminUrl}/operator/backends`)).data).toEqual([])
    }), 60_000)
})
