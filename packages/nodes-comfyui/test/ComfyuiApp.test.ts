/**
 * A workflow made an app (`appexec apps import-comfyui`): parameters with the workflow's values
 * as defaults and the titles as labels, a `Load…` input as a URL parameter, the app imported and
 * run against the test server; bad `--param` values and a UI export refused.
 */
import { ComfyuiApp } from "@appexec/nodes-comfyui"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Either } from "effect"
import * as ComfyServer from "./support/ComfyServer.js"
import { layer, run } from "./support/Instance.js"
import { imageToImage, textToImage, uiFormat } from "./support/Workflows.js"

const params = (...texts: Array<string>) => texts.map((t) => Either.getOrThrow(ComfyuiApp.parseParam(t)))

describe("ComfyuiApp", () => {
  it("makes parameters from the workflow's values, labelled by node title", () => {
    const definition = Either.getOrThrow(
      ComfyuiApp.definitionOf(textToImage, {
        name: "Text to image",
        params: params("prompt=Positive.text", "seed=3.seed")
      })
    )
    expect(definition["nodes"]).toEqual([
      {
        id: "prompt",
        type: "input.text",
        label: "Positive: text",
        config: { name: "prompt", default: textToImage["6"].inputs.text, multiline: true }
      },
      {
        id: "seed",
        type: "input.text",
        label: "KSampler: seed",
        config: { name: "seed", default: "156680208700286", description: "a number" }
      },
      {
        id: "render",
        type: "provider.comfyui",
        label: "ComfyUI",
        config: { workflow: textToImage, inputs: { "6.text": "{{prompt}}", "3.seed": "{{seed}}" } }
      },
      { id: "result", type: "output.image", label: "Result" }
    ])
    const photo = Either.getOrThrow(
      ComfyuiApp.definitionOf(imageToImage, { name: "i2i", params: params("photo=10.image") })
    )
    expect((photo["nodes"] as Array<unknown>)[0]).toMatchObject({ type: "input.url", config: { accept: ["image"] } })
  })

  it("refuses a bad --param, a linked input, a twice-given name and a UI export", () => {
    expect(Either.isLeft(ComfyuiApp.parseParam("prompt"))).toBe(true)
    expect(Either.isLeft(ComfyuiApp.parseParam("Prompt=6.text"))).toBe(true)
    expect(Either.isLeft(ComfyuiApp.definitionOf(textToImage, { name: "x", params: params("m=3.model") }))).toBe(true)
    expect(Either.isLeft(ComfyuiApp.definitionOf(textToImage, { name: "x", params: params("a=6.text", "a=7.text") })))
      .toBe(true)
    expect(ComfyuiApp.definitionOf(uiFormat, { name: "x", params: [] })).toMatchObject({
      left: expect.stringContaining("Export (API)")
    })
  })

  it.live("the app made imports and runs, its defaults filling what is not given", () =>
    Effect.gen(function*() {
      const server = yield* ComfyServer.make()
      const definition = Either.getOrThrow(
        ComfyuiApp.definitionOf(textToImage, { name: "Text to image", params: params("prompt=6.text", "seed=3.seed") })
      )
      const done = yield* run(definition, { prompt: "a quiet harbour" }).pipe(Effect.provide(layer([server.url])))
      expect(done.status).toBe("completed")
      expect(server.prompts).toBe(1)
    }).pipe(Effect.scoped))
})
