/**
 * `provider.comfyui` through real processes: `appexec serve --no-worker` takes the start, an
 * `appexec worker --comfyui URL` runs it on the test ComfyUI server (real HTTP and websocket)
 * and is killed with SIGKILL mid-sampling; the next worker takes the execution over, re-attaches
 * to the prompt the server holds instead of submitting it again (the server counts one prompt),
 * and the execution completes with an image that decodes. `serve --comfyui URL` imports the
 * example app "ComfyUI text to image", which runs with its parameters set into the workflow. A
 * cancel through the API while sampling interrupts the prompt by its id; a ComfyUI restart
 * mid-run gets the prompt once more, and the run completes. Two servers and five executions:
 * never two prompts at once on one server.
 */
import { Workflow } from "@appexec/nodes-comfyui"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Schedule } from "effect"
import sharp from "sharp"
import * as ComfyServer from "../../nodes-comfyui/test/support/ComfyServer.js"
import { appsDir, comfyuiApi, json } from "./support/ComfyuiApps.js"
import { spawnAppexec, startServe, tempDataDir } from "./support/ServeProcess.js"

describe("appexec worker --comfyui", () => {
  it.scopedLive(
    "a worker killed mid-sampling: the next one re-attaches to the prompt, never submits it twice, and the image decodes",
    () =>
      Effect.gen(function*() {
        const server = yield* ComfyServer.make({ steps: 6 })
        server.hold()
        const dataDir = yield* tempDataDir
        const serve = yield* startServe(dataDir, ["--apps", yield* appsDir, "--no-worker"])
        const { headers, start } = yield* comfyuiApi(serve)
        const id = yield* start({ prompt: "a harbour at night", seed: "3" })
        const promptId = Workflow.promptIdOf(id, "render")
        const worker = Effect.tap(
          spawnAppexec([
            "worker",
            "--data",
            dataDir,
            "--lease",
            "2s",
            "--comfyui",
            server.url,
            "--public-url",
            serve.baseUrl
          ]),
          (w) => w.waitFor(/appexec worker is running/, "stderr", "20 seconds")
        )

        const first = yield* worker
        yield* Effect.promise(() => server.until((s) => s.stateOf(promptId) === "running"))
        first.child.kill("SIGKILL")
        yield* first.exited("10 seconds")

        // The next worker takes the execution over once the lease has run out, and finds the prompt running.
        const second = yield* worker
        yield* Effect.promise(() => server.until((s) => s.connected(`appexec-${promptId}`)))
        server.resume()
        const done = yield* json(`${serve.baseUrl}/v1/executions/${id}`, { headers: { ...headers, prefer: "wait=30" } })
          .pipe(
            Effect.map((answer) => answer.data),
            Effect.filterOrFail((seen) => seen["status"] === "completed" || seen["status"] === "failed", () =>
              "unfinished"),
            Effect.retry(Schedule.recurs(3))
          )
        expect(done, second.output.stderr).toMatchObject({ status: "completed", attempt: 2 })
        expect(server.prompts).toBe(1)
        const url = (done["outputs"] as ReadonlyArray<{ readonly value: string }>)[0]!.value
        const image = yield* Effect.promise(() =>
          fetch(url).then(async (r) => new Uint8Array(await r.arrayBuffer()))
        )
        const meta = yield* Effect.promise(() => sharp(image).metadata())
        expect(meta).toMatchObject({ format: "png", width: 512, height: 512 })
      }),
    90_000
  )

  it.scopedLive(
    "serve --comfyui imports the example app ComfyUI text to image, which runs with its parameters in the workflow",
    () =>
      Effect.gen(function*() {
        const server = yield* ComfyServer.make({ steps: 4 })
        const serve = yield* startServe(yield* tempDataDir, ["--comfyui", server.url])
        yield* serve.waitFor(/Imported ComfyUI example app\(s\): ComfyUI text to image\./, "stderr")
        const { headers, start } = yield* comfyuiApi(serve)
        const id = yield* start({ prompt: "a lighthouse at dusk", steps: "3" })
        const done = yield* json(`${serve.baseUrl}/v1/executions/${id}`, { headers: { ...headers, prefer: "wait=30" } })
          .pipe(
            Effect.map((answer) => answer.data),
            Effect.filterOrFail((seen) => seen["status"] === "completed" || seen["status"] === "failed", () =>
              "unfinished"),
            Effect.retry(Schedule.recurs(3))
          )
        expect(done["status"], serve.output.stderr).toBe("completed")
        const promptId = Workflow.promptIdOf(id, "render")
        const history = yield* Effect.promise(() =>
          fetch(`${server.url}/history/${promptId}`).then((r) => r.json())
        )
        const sent = (history as Record<
          string,
          { prompt: [number, string, Record<string, { inputs: Record<string, unknown> }>] }
        >)[
          promptId
        ]!.prompt[2]
        expect([sent["6"]!.inputs["text"], sent["7"]!.inputs["text"], sent["3"]!.inputs["steps"]]).toEqual([
          "a lighthouse at dusk",
          "text, watermark",
          3
        ])
      }),
    60_000
  )

  it.scopedLive(
    "through serve: a cancel while sampling interrupts the prompt by its id; a ComfyUI restart mid-run submits it once more",
    () =>
      Effect.gen(function*() {
        const server = yield* ComfyServer.make({ steps: 4 })
        const serve = yield* startServe(yield* tempDataDir, ["--apps", yield* appsDir, "--comfyui", server.url])
        const api = yield* comfyuiApi(serve)
        const headers = api.headers
        const start = api.start({ prompt: "a harbour" })
        const finished = (id: string) =>
          json(`${serve.baseUrl}/v1/executions/${id}`, { headers: { ...headers, prefer: "wait=30" } }).pipe(
            Effect.map((answer) => answer.data),
            Effect.filterOrFail((seen) => seen["status"] === "completed" || seen["status"] === "failed", () =>
              "unfinished"),
            Effect.retry(Schedule.recurs(3))
          )

        server.hold()
        const canceled = yield* start
        const canceledPrompt = Workflow.promptIdOf(canceled, "render")
        yield* Effect.promise(() =>
          server.until((s) => s.stateOf(canceledPrompt) === "running")
        )
        yield* json(`${serve.baseUrl}/v1/executions/${canceled}/cancel`, { method: "POST", headers })
        yield* Effect.promise(() => server.until((s) => s.cancels.includes(`interrupt ${canceledPrompt}`)))
        server.resume()
        expect(yield* finished(canceled)).toMatchObject({
          status: "failed",
          errorMessage: "The execution was canceled."
        })
        yield* Effect.promise(() => server.until((s) => s.stateOf(canceledPrompt) === "done"))

        server.hold()
        const restarted = yield* start
        const restartedPrompt = Workflow.promptIdOf(restarted, "render")
        yield* Effect.promise(() => server.until((s) => s.stateOf(restartedPrompt) === "running"))
        server.restart()
        server.resume()
        expect(yield* finished(restarted), serve.output.stderr).toMatchObject({ status: "completed" })
        // One prompt canceled, then one submitted twice: before and after the restart.
        expect(server.prompts).toBe(3)
      }),
    60_000
  )

  it.scopedLive(
    "through serve: two servers and five executions, never two prompts at once on one server",
    () =>
      Effect.gen(function*() {
        const a = yield* ComfyServer.make({ steps: 3 })
        const b = yield* ComfyServer.make({ steps: 3 })
        const serve = yield* startServe(yield* tempDataDir, [
          "--apps",
          yield* appsDir,
          "--comfyui",
          `${a.url},${b.url}`
        ])
        const { headers, start } = yield* comfyuiApi(serve)
        const ids = yield* Effect.forEach([0, 1, 2, 3, 4], (i) => start({ prompt: `picture ${i}` }))
        const done = yield* Effect.forEach(ids, (id) =>
          json(`${serve.baseUrl}/v1/executions/${id}`, { headers: { ...headers, prefer: "wait=30" } }).pipe(
            Effect.map((answer) =>
              answer.data["status"]
            ),
            Effect.filterOrFail((status) => status === "completed" || status === "failed", () => "unfinished"),
            Effect.retry(Schedule.recurs(3))
          ))
        expect(done).toEqual(Array(5).fill("completed"))
        expect(a.prompts + b.prompts).toBe(5)
        expect([a.maxLoad, b.maxLoad]).toEqual([1, 1])
      }),
    60_000
  )

  it.scopedLive(
    "through serve: one server of capacity 1, three executions: one runs, the others wait in appexec's queue with their position",
    () =>
      Effect.gen(function*() {
        const server = yield* ComfyServer.make({ steps: 20, stepDelayMs: 50 })
        const serve = yield* startServe(yield* tempDataDir, ["--apps", yield* appsDir, "--comfyui", server.url])
        const { headers, start } = yield* comfyuiApi(serve)
        const ids = yield* Effect.forEach([0, 1, 2], (i) => start({ prompt: `picture ${i}` }))
        const poll = (id: string) =>
          Effect.map(json(`${serve.baseUrl}/v1/executions/${id}`, { headers }), (a) => a.data)
        // Once one runs, the other two are queued in appexec (serve's worker has room for four,
        // but the servers' capacity is one), each with its queue position.
        const seen = yield* Effect.forEach(ids, poll).pipe(
          Effect.filterOrFail((all) => all.some((e) => e["status"] === "running"), () => "none running yet"),
          Effect.retry(Schedule.spaced("50 millis").pipe(Schedule.upTo("20 seconds")))
        )
        const queued = seen.filter((e) => e["status"] === "queued")
        expect(seen.filter((e) => e["status"] === "running")).toHaveLength(1)
        expect(queued).toHaveLength(2)
        expect(queued.map((e) => e["queuePosition"]).sort()).toEqual([0, 1])
        const done = yield* Effect.forEach(ids, (id) =>
          json(`${serve.baseUrl}/v1/executions/${id}`, { headers: { ...headers, prefer: "wait=30" } }).pipe(
            Effect.map((answer) => answer.data["status"]),
            Effect.filterOrFail((status) => status === "completed" || status === "failed", () => "unfinished"),
            Effect.retry(Schedule.recurs(3))
          ))
        expect(done).toEqual(Array(3).fill("completed"))
        expect(server.maxLoad).toBe(1)
      }),
    90_000
  )
})
