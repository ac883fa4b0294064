/**
 * `provider.comfyui`'s partial outputs against the protocol-faithful test server: a workflow with
 * two save nodes, the run held after the first one (`holdAt`): the first file reaches the app's
 * output while the execution still runs (the event stream shows it `completed` with a URL whose
 * image decodes), and the final output is that same file. With `outputNode` naming the later save
 * node, the earlier file is never shown.
 */
import { Execution } from "@appexec/api"
import { Appexec } from "@appexec/core"
import { Workflow } from "@appexec/nodes-comfyui"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Option, Schema, Stream } from "effect"
import { describeImage } from "../../nodes/test/support/Images.js"
import { logOf } from "../../nodes/test/support/ProviderRuns.js"
import * as ComfyServer from "./support/ComfyServer.js"
import { download, layer, start } from "./support/Instance.js"
import { app, twoSaves } from "./support/Workflows.js"

const decodeExecution = Schema.decodeUnknownSync(Schema.parseJson(Execution.Execution))

describe("provider.comfyui partial outputs", () => {
  it.live("the first save node's image is the output while the run goes on, and stays its final value", () =>
    Effect.gen(function*() {
      // The run waits before the second sampler, once the first image is saved.
      const server = yield* ComfyServer.make({ steps: 2, holdAt: "10" })
      yield* Effect.gen(function*() {
        const appexec = yield* Appexec.Appexec
        const { executionId, principal } = yield* start(app(twoSaves), { prompt: "a lighthouse at dusk" })
        const promptId = Workflow.promptIdOf(executionId, "render")
        const stream = yield* appexec.executions.events(principal, executionId)
        const shown = yield* stream.pipe(
          Stream.filter((e) => e.event === "execution"),
          Stream.map((e) => decodeExecution(e.data)),
          Stream.filter((e) => e.outputs[0]!.status === "completed" || e.status !== "running"),
          Stream.runHead,
          Effect.map(Option.getOrThrow),
          Effect.timeout("10 seconds")
        )
        // Still running on ComfyUI, held before its second sampler.
        expect(shown.status).toBe("running")
        expect(server.stateOf(promptId)).toBe("running")
        const output = shown.outputs[0]!
        expect(output).toMatchObject({ id: "image", type: "image", status: "completed", error: null })
        const blob = yield* download(output.value!)
        expect(blob.contentType).toBe("image/png")
        expect(yield* describeImage(blob.bytes)).toEqual({ format: "png", width: 512, height: 512 })
        const polled = yield* appexec.executions.get(principal, executionId)
        // The same stored file: a media URL is signed as it is shown, so its query may differ.
        const stored = (url: string | null | undefined) => new URL(url!).pathname
        expect([polled.status, stored(polled.outputs[0]!.value)]).toEqual(["running", stored(output.value)])

        server.resume()
        const done = yield* appexec.executions.await(executionId as never)
        expect(done.status).toBe("completed")
        expect(stored(done.outputs[0]!.value)).toBe(stored(output.value))
        const log = (yield* logOf(executionId)).join("\n")
        expect(log).toMatch(/partial output: ComfyUI_\d+_\.png, image\/png, .* \(ComfyUI node 9\)/)
        expect(log).toContain("as shown while the run went on")
      }).pipe(Effect.provide(layer([server.url])))
    }).pipe(Effect.scoped))

  it.live("with outputNode naming the later save node, only its file is shown", () =>
    Effect.gen(function*() {
      const server = yield* ComfyServer.make({ steps: 2 })
      yield* Effect.gen(function*() {
        const appexec = yield* Appexec.Appexec
        const { executionId } = yield* start(app(twoSaves, { outputNode: "Save Refined" }), { prompt: "dusk" })
        const done = yield* appexec.executions.await(executionId as never)
        expect(done.status).toBe("completed")
        const log = (yield* logOf(executionId)).join("\n")
        expect(log).toMatch(/partial output: Refined_\d+_\.png, .* \(ComfyUI node 12\)/)
        expect(log).not.toContain("(ComfyUI node 9)")
        const blob = yield* download(done.outputs[0]!.value!)
        expect(yield* describeImage(blob.bytes)).toMatchObject({ format: "png" })
      }).pipe(Effect.provide(layer([server.url])))
    }).pipe(Effect.scoped))
})
