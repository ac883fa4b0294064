/**
 * The live preview of a run, in a real Chromium against the compiled `appexec serve --comfyui`
 * and the ComfyUI test server (which sends a JPEG frame at each sampler step): while the sampler
 * runs, the run's page shows the newest preview, decoded, its alt text naming the node, replaced
 * as newer frames come; once the run completes, the preview is gone and the output image shows.
 */
import { expect, layer } from "@effect/vitest"
import { Context, Effect, Layer } from "effect"
import * as ComfyServer from "../../../nodes-comfyui/test/support/ComfyServer.js"
import { app, textToImage } from "../../../nodes-comfyui/test/support/Workflows.js"
import * as Chromium from "../support/Chromium.js"
import * as ConsolePage from "../support/ConsolePage.js"
import * as ServedConsole from "../support/ServedConsole.js"

/** The ComfyUI test server the instance runs its prompts on. */
class Comfy extends Context.Tag("@appexec/console/test/Comfy")<Comfy, ComfyServer.ComfyServer>() {}

const served = Layer.unwrapScoped(Effect.gen(function*() {
  const comfy = yield* ComfyServer.make({ steps: 16, stepDelayMs: 250 })
  return Layer.mergeAll(
    ServedConsole.layerWith({ "comfyui.json": { ...app(textToImage), public: true } }, ["--comfyui", comfy.url]),
    Chromium.layer,
    Layer.succeed(Comfy, comfy)
  )
}))

const PREVIEW = "img[data-testid='run-preview']"

layer(served, { timeout: "90 seconds", excludeTestServices: true })("the live preview of a run", (it) => {
  it.scoped(
    "shows the newest preview while sampling, named by its node, and the output once done",
    () =>
      Effect.gen(function*() {
        const comfy = yield* Comfy
        const tab = yield* ConsolePage.open()
        yield* tab.signIn()
        yield* tab.runApp("ComfyUI text to image", { Prompt: "a lighthouse at dusk" })
        yield* tab.waitUntil(
          "a preview is decoded",
          (selector) => {
            const img = document.querySelector<HTMLImageElement>(selector)
            return img !== null && img.complete && img.naturalWidth > 0
          },
          PREVIEW
        )
        // A newer frame replaces it while the sampler runs.
        const first = yield* Effect.promise(() => tab.page.$eval(PREVIEW, (img) => img.src))
        yield* tab.waitUntil(
          "a newer preview replaces it",
          (selector, before) => {
            const img = document.querySelector<HTMLImageElement>(selector)
            return img !== null && img.src !== before && img.complete && img.naturalWidth > 0
          },
          PREVIEW,
          first
        )
        // Held before its next step, the sampler sends no more frames: the page keeps the newest.
        comfy.hold()
        const shown = yield* Effect.promise(() =>
          tab.page.$eval(PREVIEW, (img) => ({ alt: img.alt, width: img.naturalWidth, height: img.naturalHeight }))
        )
        // The workflow graph shows the ComfyUI nodes in the node's place: the node is named by its id.
        expect(shown).toEqual({ alt: "Live preview of render", width: 16, height: 16 })
        yield* tab.waitForStatus("running")
        yield* tab.screenshot("run-preview")
        comfy.resume()
        yield* tab.waitForStatus("completed")
        yield* tab.waitUntil("the preview is gone", (selector) => document.querySelector(selector) === null, PREVIEW)
        yield* tab.waitUntil(
          "the output image is decoded",
          () => {
            const img = document.querySelector<HTMLImageElement>("[data-output='image'] img.output-image")
            return img !== null && img.complete && img.naturalWidth > 0
          }
        )
        yield* tab.screenshot("run-preview-done")
        expect(tab.errors).toEqual([])
      }),
    60_000
  )
})
