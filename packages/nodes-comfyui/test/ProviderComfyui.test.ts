/**
 * `provider.comfyui` against the protocol-faithful test server (`support/ComfyServer.ts`, real
 * HTTP and websocket on 127.0.0.1): a run whose output decodes as an image, inputs set by id and
 * by title, progress per ComfyUI node, an upload, a cancel while queued and while sampling, an
 * `execution_error`, a re-attach to a prompt the server already holds (its prompt counter
 * proves no second submit), a ComfyUI restart mid-run (submitted again once), a websocket that
 * drops (polling), an older server without `/api/jobs`, a UI-format export refused, and the
 * pool's health: a server stopped leaves it and comes back, and a run waits while every server is down.
 */
import { Ids } from "@appexec/api"
import { Appexec, ExecutionReports, SecretStore } from "@appexec/core"
import { ComfyuiPool, ComfyuiSettings, ProviderComfyui, Workflow } from "@appexec/nodes-comfyui"
import { TestHarness } from "@appexec/testing"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Either, Fiber, Redacted } from "effect"
import * as FakeOrigin from "../../nodes/test/support/FakeOrigin.js"
import { describeImage, testImage } from "../../nodes/test/support/Images.js"
import * as ComfyServer from "./support/ComfyServer.js"
import { download, layer, run, start } from "./support/Instance.js"
import { app, imageToImage, textToImage, uiFormat } from "./support/Workflows.js"

const wait = (promise: () => Promise<void>) => Effect.promise(promise)

const finish = (executionId: string) =>
  Effect.flatMap(Appexec.Appexec, (appexec) => appexec.executions.await(Ids.ExecutionId.make(executionId)))

const logOf = (executionId: string) =>
  Effect.gen(function*() {
    const reports = yield* ExecutionReports.ExecutionReports
    const kept = yield* reports.logs(Ids.ExecutionId.make(executionId))
    return kept.lines.map(({ report }) => (report._tag === "Log" ? report.message : "")).join("\n")
  })

const imageOf = (done: { readonly outputs: ReadonlyArray<{ readonly value: string | null }> }) =>
  Effect.gen(function*() {
    const blob = yield* download(done.outputs[0]!.value!)
    return { contentType: blob.contentType, ...(yield* describeImage(blob.bytes)) }
  })

describe("provider.comfyui", () => {
  it.live("a run's image, progress per ComfyUI node and prompt id", () =>
    Effect.gen(function*() {
      const server = yield* ComfyServer.make({ steps: 4 })
      yield* Effect.gen(function*() {
        const { executionId } = yield* start(app(textToImage), { prompt: "a lighthouse at dusk", seed: "7" })
        const done = yield* finish(executionId)
        expect(done.status).toBe("completed")
        expect(yield* imageOf(done)).toMatchObject({ contentType: "image/png", format: "png", width: 512, height: 512 })
        const log = yield* logOf(executionId)
        const promptId = Workflow.promptIdOf(executionId, "render")
        expect(log).toContain(`prompt ${promptId} submitted`)
        expect(log).toContain("ComfyUI node 9 (SaveImage) produced 1 file")
        expect(log).toContain("4 preview frames received")
        const history = yield* Effect.promise(() => fetch(`${server.url}/history/${promptId}`).then((r) => r.json()))
        const sent = (history as Record<
          string,
          { prompt: [number, string, Record<string, { inputs: Record<string, unknown> }>] }
        >)[promptId]!.prompt[2]
        expect(sent["6"]!.inputs["text"]).toBe("a lighthouse at dusk")
        expect(sent["3"]!.inputs["seed"]).toBe(7)
      }).pipe(Effect.provide(layer([server.url])))
    }).pipe(Effect.scoped))

  it.live("fails with the node type and the exception of an execution_error", () =>
    Effect.gen(function*() {
      const server = yield* ComfyServer.make({
        failing: { classType: "VAEDecode", type: "torch.OutOfMemoryError", message: "Allocation on device" }
      })
      const done = yield* run(app(textToImage), { prompt: "x" }).pipe(Effect.provide(layer([server.url])))
      expect(done.status).toBe("failed")
      expect(done.outputs[0]!.error).toContain(
        "ComfyUI node 8 (VAEDecode) failed: torch.OutOfMemoryError: Allocation on device"
      )
    }).pipe(Effect.scoped))

  it.live("a workflow ComfyUI refuses (a node class it does not have) fails with ComfyUI's error", () =>
    Effect.gen(function*() {
      const server = yield* ComfyServer.make()
      const workflow = { ...textToImage, "8": { class_type: "VAEDecodeTiled9000", inputs: { samples: ["3", 0] } } }
      const done = yield* run(app(workflow), { prompt: "x" }).pipe(Effect.provide(layer([server.url])))
      expect(done.outputs[0]!.error).toContain(
        "ComfyUI refused the workflow: Cannot execute because node VAEDecodeTiled9000 does not exist. (Node ID '#8')"
      )
      expect(server.prompts).toBe(0)
    }).pipe(Effect.scoped))

  it.live("a server behind a proxy gets the operator's secret as Authorization, on HTTP and the websocket", () =>
    Effect.gen(function*() {
      const server = yield* ComfyServer.make({ auth: "Bearer proxy-token-5f1c" })
      const withSecret = layer([server.url], { authSecret: "COMFYUI_AUTH" })
      const done = yield* Effect.gen(function*() {
        const store = yield* SecretStore.SecretStore
        yield* store.set("COMFYUI_AUTH", Redacted.make("Bearer proxy-token-5f1c"), undefined)
        const { executionId } = yield* start(app(textToImage), { prompt: "behind a proxy" })
        const done = yield* finish(executionId)
        // Followed over the websocket (the proxy let it in): its events became log lines.
        expect(yield* logOf(executionId), JSON.stringify(done)).toContain("ComfyUI node 9 (SaveImage) produced 1 file")
        return done
      }).pipe(Effect.provide(withSecret))
      expect(done.status).toBe("completed")
      const unset = yield* run(app(textToImage), { prompt: "x" }).pipe(
        Effect.provide(layer([server.url], { authSecret: "COMFYUI_AUTH" }))
      )
      expect(unset.outputs[0]!.error).toContain("The secret COMFYUI_AUTH is not set")
      expect(server.prompts).toBe(1)
    }).pipe(Effect.scoped))

  it.live("cancel while queued: the prompt is deleted from ComfyUI's queue and never runs", () =>
    Effect.gen(function*() {
      const server = yield* ComfyServer.make()
      // Another client's prompt holds the server.
      server.hold()
      yield* Effect.promise(() =>
        fetch(`${server.url}/prompt`, {
          method: "POST",
          body: JSON.stringify({ prompt: textToImage, client_id: "other" })
        })
      )
      yield* Effect.gen(function*() {
        const { executionId, principal } = yield* start(app(textToImage), { prompt: "queued" })
        const promptId = Workflow.promptIdOf(executionId, "render")
        yield* wait(() => server.until((s) => s.stateOf(promptId) === "pending"))
        yield* (yield* Appexec.Appexec).executions.cancel(executionId, principal)
        const done = yield* finish(executionId)
        expect(done.errorMessage).toBe("The execution was canceled.")
        yield* wait(() => server.until((s) => s.cancels.includes(`delete ${promptId}`)))
        server.resume()
        expect(server.stateOf(promptId)).toBe("unknown")
      }).pipe(Effect.provide(layer([server.url])))
    }).pipe(Effect.scoped))

  it.live("cancel while sampling: the prompt is interrupted by its id and the run ends", () =>
    Effect.gen(function*() {
      const server = yield* ComfyServer.make({ steps: 10 })
      yield* Effect.gen(function*() {
        server.hold()
        const { executionId, principal } = yield* start(app(textToImage), { prompt: "sampling" })
        const promptId = Workflow.promptIdOf(executionId, "render")
        yield* wait(() => server.until((s) => s.stateOf(promptId) === "running"))
        const canceling = yield* Effect.fork((yield* Appexec.Appexec).executions.cancel(executionId, principal))
        yield* wait(() => server.until((s) => s.cancels.includes(`interrupt ${promptId}`)))
        server.resume()
        yield* Fiber.join(canceling)
        expect((yield* finish(executionId)).errorMessage).toBe("The execution was canceled.")
        yield* wait(() => server.until((s) => s.stateOf(promptId) === "done"))
        const job = yield* Effect.promise(() => fetch(`${server.url}/api/jobs/${promptId}`).then((r) => r.json()))
        expect(job).toMatchObject({ status: "cancelled" })
      }).pipe(Effect.provide(layer([server.url])))
    }).pipe(Effect.scoped))

  it.live("the app's workflow graph shows the ComfyUI nodes and links in the node's place", () =>
    Effect.gen(function*() {
      const server = yield* ComfyServer.make()
      const graph = yield* Effect.gen(function*() {
        const appexec = yield* Appexec.Appexec
        const imported = yield* appexec.apps.import({ public: true, ...app(textToImage) })
        return yield* appexec.apps.workflow(yield* TestHarness.signIn(), imported.appId)
      }).pipe(Effect.provide(layer([server.url])))
      expect(graph.nodes.map((n) => n.id)).toEqual(
        ["prompt", "seed", ...["3", "4", "5", "6", "7", "8", "9"].map((id) => `render/${id}`), "image"]
      )
      expect(graph.nodes).toContainEqual({ id: "render/6", type: "CLIPTextEncode", label: "Positive" })
      expect(graph.edges).toEqual(expect.arrayContaining([
        { source: "render/4", target: "render/3" },
        { source: "render/8", target: "render/9" },
        { source: "prompt", target: "render/6" },
        { source: "seed", target: "render/3" },
        { source: "render/9", target: "image" }
      ]))
      expect(graph.edges.some((e) => e.source === "render" || e.target === "render")).toBe(false)
    }).pipe(Effect.scoped))

  it.live("a run past its time limit is interrupted on ComfyUI and fails saying so", () =>
    Effect.gen(function*() {
      const server = yield* ComfyServer.make()
      server.hold()
      yield* Effect.gen(function*() {
        const { executionId } = yield* start(app(textToImage, { timeoutMs: 1000 }), { prompt: "slow" })
        const promptId = Workflow.promptIdOf(executionId, "render")
        // The interrupt reaches the held sampler, which then stops.
        yield* wait(() => server.until((s) => s.cancels.includes(`interrupt ${promptId}`)))
        server.resume()
        const done = yield* finish(executionId)
        expect(done.outputs[0]!.error).toContain("the ComfyUI run did not finish within 1 s; it was canceled")
        expect(yield* logOf(executionId)).toContain(`prompt ${promptId} interrupted on ComfyUI`)
      }).pipe(Effect.provide(layer([server.url])))
    }).pipe(Effect.scoped))

  it.live("refuses a UI-format export at import, saying to use Export (API)", () =>
    Effect.gen(function*() {
      const server = yield* ComfyServer.make()
      const refused = yield* Effect.either(
        run(app(uiFormat), { prompt: "x" }).pipe(Effect.provide(layer([server.url])))
      )
      expect(Either.isLeft(refused)).toBe(true)
      expect(JSON.stringify(refused)).toContain("Export (API)")
      expect(Either.isLeft(Workflow.decode(uiFormat))).toBe(true)
    }).pipe(Effect.scoped))

  it.live("uploads an image input into a LoadImage node; an input it cannot find fails the run", () =>
    Effect.gen(function*() {
      const server = yield* ComfyServer.make()
      const photo = yield* testImage(40, 30)
      const origin = yield* FakeOrigin.start({
        "/photo.png": { headers: { "content-type": "image/png" }, body: photo }
      })
      const definition = (type: "input.url" | "input.text") => ({
        name: "Image to image",
        nodes: [
          {
            id: "photo",
            type,
            config: { name: "photo", required: true, ...(type === "input.url" ? { accept: ["image"] } : {}) }
          },
          {
            id: "render",
            type: "provider.comfyui",
            config: { workflow: imageToImage, inputs: { "Photo.image": "{{photo}}" } }
          },
          { id: "image", type: "output.image" }
        ],
        edges: [{ source: "photo", target: "render" }, { source: "render", target: "image" }]
      })
      yield* Effect.gen(function*() {
        const done = yield* run(definition("input.url"), { photo: origin.url("/photo.png") })
        expect(done.status).toBe("completed")
        const promptId = Workflow.promptIdOf(done.executionId, "render")
        expect(server.inputFile(`appexec/${promptId}-1.png`)?.bytes).toEqual(new Uint8Array(photo))
        // A file name given as text, which the server does not have: ComfyUI's error is the run's.
        const missing = yield* run(definition("input.text"), { photo: "not-uploaded.png" })
        expect(missing.outputs[0]!.error).toContain("ComfyUI node 10 (LoadImage) failed: FileNotFoundError")
      }).pipe(Effect.provide(layer([server.url])))
    }).pipe(Effect.scoped))
})

describe("provider.comfyui never runs a prompt twice", () => {
  /** Runs the node alone as execution `executionId` (as a later attempt would), its log in `lines`. */
  const runNode = (executionId: string, lines: Array<string>) =>
    Effect.gen(function*() {
      const node = ProviderComfyui.providerComfyui.compile(
        { workflow: textToImage, inputs: {} },
        { id: "render", label: "Render", upstream: [] }
      )
      if (Either.isLeft(node) || node.right.role !== "process") throw new Error("provider.comfyui did not compile")
      return yield* node.right.run({
        node: { id: "render", label: "Render" },
        upstream: [],
        execution: {
          executionId: Ids.ExecutionId.make(executionId),
          appId: Ids.AppId.make("0190f0a0-0000-7000-8000-0000000000aa"),
          workspaceId: Ids.WorkspaceId.make("0190f0a0-0000-7000-8000-0000000000bb")
        },
        progress: () => Effect.void,
        log: (message) => Effect.sync(() => void lines.push(message)),
        preview: () => Effect.void,
        partial: () => Effect.void
      })
    })

  /** An earlier attempt's submit of execution `executionId`'s prompt, whose answer never came back. */
  const submitted = (server: ComfyServer.ComfyServer, executionId: string) => {
    const promptId = Workflow.promptIdOf(executionId, "render")
    return Effect.promise(() =>
      fetch(`${server.url}/prompt`, {
        method: "POST",
        body: JSON.stringify({ prompt: textToImage, client_id: `appexec-${promptId}`, prompt_id: promptId })
      })
    ).pipe(Effect.as(promptId))
  }

  it.live("re-attaches to a prompt the server already holds (a lost answer): no second submit", () =>
    Effect.gen(function*() {
      const server = yield* ComfyServer.make({ steps: 3 })
      yield* Effect.gen(function*() {
        const executionId = "0190f0a0-0000-7000-8000-000000000001"
        const promptId = yield* submitted(server, executionId)
        const lines: Array<string> = []
        const value = yield* runNode(executionId, lines)
        expect(server.prompts).toBe(1)
        expect(lines.join("\n")).toContain(`re-attaching to prompt ${promptId}`)
        expect(value._tag).toBe("Media")
        if (value._tag === "Media") expect(yield* describeImage(value.bytes)).toMatchObject({ format: "png" })
      }).pipe(Effect.provide(layer([server.url])))
    }).pipe(Effect.scoped))

  it.live("re-attaches to a prompt that already failed: its error, not a second run", () =>
    Effect.gen(function*() {
      const server = yield* ComfyServer.make({
        failing: { classType: "KSampler", type: "RuntimeError", message: "CUDA error" }
      })
      yield* Effect.gen(function*() {
        const executionId = "0190f0a0-0000-7000-8000-000000000002"
        const promptId = yield* submitted(server, executionId)
        yield* Effect.promise(() => server.until((s) => s.stateOf(promptId) === "done"))
        const failure = yield* Effect.flip(runNode(executionId, []))
        expect(failure.message).toBe("ComfyUI node 3 (KSampler) failed: RuntimeError: CUDA error")
        expect(server.prompts).toBe(1)
      }).pipe(Effect.provide(layer([server.url])))
    }).pipe(Effect.scoped))

  it.live("a server that does not keep the given prompt_id: the prompt is taken back and the run fails saying why", () =>
    Effect.gen(function*() {
      const server = yield* ComfyServer.make({ clientPromptIds: false })
      server.hold()
      const done = yield* run(app(textToImage), { prompt: "x" }).pipe(Effect.provide(layer([server.url])))
      expect(done.outputs[0]!.error).toContain("does not keep the prompt_id it is given")
      expect(server.cancels.map((c) => c.split(" ")[0])).toEqual(["delete", "interrupt"])
      server.resume()
    }).pipe(Effect.scoped))

  it.live("a ComfyUI restart mid-run: the prompt is submitted again once, logged, and completes", () =>
    Effect.gen(function*() {
      const server = yield* ComfyServer.make({ steps: 5 })
      yield* Effect.gen(function*() {
        server.hold()
        const { executionId } = yield* start(app(textToImage), { prompt: "restart" })
        const promptId = Workflow.promptIdOf(executionId, "render")
        yield* wait(() => server.until((s) => s.stateOf(promptId) === "running"))
        server.restart()
        server.resume()
        const done = yield* finish(executionId)
        expect(done.status).toBe("completed")
        expect(server.prompts).toBe(2)
        expect(yield* logOf(executionId)).toContain("no longer knows prompt")
      }).pipe(Effect.provide(layer([server.url])))
    }).pipe(Effect.scoped))

  it.live("a websocket that drops: the run is followed by polling and completes", () =>
    Effect.gen(function*() {
      const server = yield* ComfyServer.make({ steps: 5, jobsApi: false })
      yield* Effect.gen(function*() {
        server.hold()
        const { executionId } = yield* start(app(textToImage), { prompt: "drop" })
        const promptId = Workflow.promptIdOf(executionId, "render")
        yield* wait(() => server.until((s) => s.stateOf(promptId) === "running" && s.connected(`appexec-${promptId}`)))
        server.dropSockets()
        server.resume()
        const done = yield* finish(executionId)
        expect(done.status).toBe("completed")
        expect(server.prompts).toBe(1)
        expect(yield* logOf(executionId)).toContain("websocket closed")
      }).pipe(Effect.provide(layer([server.url])))
    }).pipe(Effect.scoped))
})

describe("the pool of ComfyUI servers", () => {
  it.live("two servers and five executions: every one completes, never two prompts at once on one server", () =>
    Effect.gen(function*() {
      const a = yield* ComfyServer.make({ steps: 3 })
      const b = yield* ComfyServer.make({ steps: 3 })
      yield* Effect.gen(function*() {
        const started = yield* Effect.forEach(
          Array.from({ length: 5 }, (_, i) => i),
          (i) => start(app(textToImage), { prompt: `picture ${i}` })
        )
        const done = yield* Effect.forEach(started, ({ executionId }) => finish(executionId))
        expect(done.map((d) => d.status)).toEqual(Array(5).fill("completed"))
        expect(a.prompts + b.prompts).toBe(5)
        expect([a.maxLoad, b.maxLoad]).toEqual([1, 1])
      }).pipe(Effect.provide(layer([a.url, b.url])))
    }).pipe(Effect.scoped))

  it.live("a server of capacity 2 (URL*2) runs two prompts of the process at once, never three", () =>
    Effect.gen(function*() {
      const server = yield* ComfyServer.make({ steps: 3 })
      expect(ComfyuiSettings.parseServers(` ${server.url}/*2 ,http://gpu-2:8188`)).toEqual(
        Either.right([`${server.url}*2`, "http://gpu-2:8188"])
      )
      expect(Either.isLeft(ComfyuiSettings.parseServers(`${server.url}*0`))).toBe(true)
      yield* Effect.gen(function*() {
        const started = yield* Effect.forEach([0, 1, 2], (i) => start(app(textToImage), { prompt: `p${i}` }))
        const done = yield* Effect.forEach(started, ({ executionId }) => finish(executionId))
        expect(done.map((d) => d.status)).toEqual(["completed", "completed", "completed"])
        expect(server.maxLoad).toBe(2)
      }).pipe(Effect.provide(layer([`${server.url}*2`])))
    }).pipe(Effect.scoped))

  it.live(
    "a server stopped between runs leaves the pool: the next runs go to the live one; started again, it takes runs again",
    () =>
      Effect.gen(function*() {
        const a = yield* ComfyServer.make({ steps: 2 })
        const b = yield* ComfyServer.make({ steps: 2 })
        yield* Effect.gen(function*() {
          const pool = yield* ComfyuiPool.ComfyuiPool
          const runOne = (prompt: string) =>
            Effect.flatMap(start(app(textToImage), { prompt }), ({ executionId }) => finish(executionId))
          // A free, first in order, takes the first run.
          expect((yield* runOne("first")).status).toBe("completed")
          expect([a.prompts, b.prompts]).toEqual([1, 0])

          yield* Effect.promise(() => a.close())
          const next = yield* Effect.forEach(["second", "third", "fourth"], runOne)
          expect(next.map((d) => d.status)).toEqual(["completed", "completed", "completed"])
          expect([a.prompts, b.prompts]).toEqual([1, 3])
          expect((yield* pool.down).get(a.url)?.error).toContain("did not answer")

          yield* Effect.promise(() => a.listen())
          yield* pool.awaitUp([a.url]).pipe(Effect.timeout("40 seconds"))
          expect((yield* runOne("fifth")).status).toBe("completed")
          expect([a.prompts, b.prompts]).toEqual([2, 3])
        }).pipe(Effect.provide(layer([a.url, b.url])))
      }).pipe(Effect.scoped),
    60_000
  )

  it.live("every server down: a run waits for one to come back, within its time limit, else fails saying so", () =>
    Effect.gen(function*() {
      const a = yield* ComfyServer.make({ steps: 2 })
      yield* Effect.promise(() => a.close())
      yield* Effect.gen(function*() {
        const failed = yield* run(app(textToImage, { timeoutMs: 1000 }), { prompt: "x" })
        expect(failed.outputs[0]!.error).toContain(
          `no ComfyUI server answered and was free within 1 s (${new URL(a.url).host}); nothing was submitted`
        )
        expect(yield* logOf(failed.executionId)).toContain("waiting for one to come back")

        const { executionId } = yield* start(app(textToImage), { prompt: "y" })
        yield* Effect.promise(() => a.listen())
        const done = yield* finish(executionId)
        expect(done.status).toBe("completed")
        expect(a.prompts).toBe(1)
      }).pipe(Effect.provide(layer([a.url])))
    }).pipe(Effect.scoped))
})
