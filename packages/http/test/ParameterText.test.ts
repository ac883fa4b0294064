/**
 * Parameters carry their human text (docs/api.md#parameter): `GET /v1/apps/{appId}` gives each
 * parameter the input node's `label` and `config.description` where the app defines them, and
 * omits them where it does not; the same for `config.example` and a text input's
 * `config.multiline` (docs/api.md#parameter-example-and-multiline); the spec's fields stay as they are.
 */
import { Api } from "@appexec/api"
import { Appexec } from "@appexec/core"
import { TestHarness } from "@appexec/testing"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Schema } from "effect"
import { get, stack } from "./fixtures.js"

const described = {
  name: "Described",
  description: "Inputs with human text",
  public: true,
  nodes: [
    {
      id: "prompt",
      type: "input.text",
      label: "What to draw",
      config: { name: "prompt", required: true, description: "One sentence describing the picture." }
    },
    {
      id: "style",
      type: "input.options",
      label: "Style",
      config: { name: "style", options: ["flat", "neon"], default: "flat" }
    },
    { id: "photo", type: "input.url", config: { name: "photo", description: "A reference image." } },
    { id: "compose", type: "text.template", label: "Compose", config: { template: "{{prompt}} {{style}}" } },
    { id: "out", type: "output.text", label: "Out" }
  ],
  edges: [
    { source: "prompt", target: "compose" },
    { source: "style", target: "compose" },
    { source: "compose", target: "out" }
  ]
}

describe("parameter label and description", () => {
  it.scoped("GET /v1/apps/{appId} returns each parameter's label and description, omitted when absent", () =>
    Effect.gen(function*() {
      const appexec = yield* Appexec.Appexec
      const app = yield* appexec.apps.import(described, { owner: { public: true } })
      const alice = yield* TestHarness.signIn("alice")
      const detail = yield* get(`/v1/apps/${app.appId}`, alice.key)
      expect(detail.status).toBe(200)
      const parameters = (detail.body as { data: { parameters: Array<Record<string, unknown>> } }).data.parameters
      expect(parameters.map(({ id: _, ...rest }) => rest)).toEqual([
        {
          name: "prompt",
          type: "text",
          required: true,
          label: "What to draw",
          description: "One sentence describing the picture."
        },
        { name: "style", type: "options", required: false, options: ["flat", "neon"], default: "flat", label: "Style" },
        { name: "photo", type: "url", required: false, accept: ["image"], description: "A reference image." }
      ])
      // The client's schema (shared with the server) keeps them.
      const decoded = Schema.decodeUnknownSync(Api.getApp.successSchema)(detail.body)
      expect(decoded.data.parameters.map((p) => [p.label, p.description])).toEqual([
        ["What to draw", "One sentence describing the picture."],
        ["Style", undefined],
        [undefined, "A reference image."]
      ])
    }).pipe(Effect.provide(stack())))

  it.scoped("GET /v1/apps/{appId} returns a parameter's example and multiline, omitted when absent", () =>
    Effect.gen(function*() {
      const appexec = yield* Appexec.Appexec
      const app = yield* appexec.apps.import(
        {
          ...described,
          name: "Exemplified",
          nodes: described.nodes.map((node) =>
            node.id === "prompt"
              ? { ...node, config: { ...node.config, multiline: true, example: "A lighthouse at dusk" } }
              : node.id === "photo"
              ? { ...node, config: { ...node.config, example: "https://example.com/dusk.png" } }
              : node
          )
        },
        { owner: { public: true } }
      )
      const alice = yield* TestHarness.signIn("alice")
      const detail = yield* get(`/v1/apps/${app.appId}`, alice.key)
      expect(detail.status).toBe(200)
      const decoded = Schema.decodeUnknownSync(Api.getApp.successSchema)(detail.body)
      expect(decoded.data.parameters.map((p) => [p.name, p.example, p.multiline])).toEqual([
        ["prompt", "A lighthouse at dusk", true],
        ["style", undefined, undefined],
        ["photo", "https://example.com/dusk.png", undefined]
      ])
      const parameters = (detail.body as { data: { parameters: Array<Record<string, unknown>> } }).data.parameters
      expect(parameters.map((p) => Object.keys(p).filter((k) => k === "example" || k === "multiline"))).toEqual([
        ["example", "multiline"],
        [],
        ["example"]
      ])
    }).pipe(Effect.provide(stack())))
})
