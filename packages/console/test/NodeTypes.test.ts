/**
 * The node types of a worker or an app in a table cell (`summarize`): how many, then their
 * families, a family of one by its type's name, the first four families only.
 */
import { describe, expect, it } from "@effect/vitest"
import { summarize } from "../src/app/components/NodeTypes.js"

describe("a list of node types, shortened", () => {
  it("counts the types and names their families, a lone type by its own name", () => {
    expect(summarize(["util.delay", "input.text", "provider.comfyui", "input.url"])).toBe(
      "4 types: input ×2, provider.comfyui, util.delay"
    )
    expect(summarize(["text.template"])).toBe("1 type: text.template")
    expect(summarize([])).toBe("no node types")
  })

  it("names the first four families only", () => {
    const types = ["a.1", "a.2", "b.1", "c.1", "c.2", "d.1", "e.1", "f.1"]
    expect(summarize(types)).toBe("8 types: a ×2, b.1, c ×2, d.1, …")
  })
})
