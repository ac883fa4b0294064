/**
 * Workflows in API format: a UI export refused, inputs found by node id or title (a linked
 * input refused), values taking the workflow's types, and the prompt id of an execution: the same
 * for every attempt, a canonical lowercase UUID, another for another node or execution.
 */
import { Workflow } from "@appexec/nodes-comfyui"
import { describe, expect, it } from "@effect/vitest"
import { Either } from "effect"
import { textToImage, uiFormat } from "./support/Workflows.js"

const workflow = Either.getOrThrow(Workflow.decode(textToImage))

describe("Workflow", () => {
  it("refuses a UI-format export, naming Export (API), and a node without class_type", () => {
    expect(Workflow.decode(uiFormat)).toEqual(Either.left(Workflow.UI_FORMAT))
    expect(Workflow.UI_FORMAT).toContain("\"Export (API)\"")
    expect(Either.isLeft(Workflow.decode({ "1": { inputs: {} } }))).toBe(true)
    expect(Workflow.decode({ "1": { class_type: "SaveImage", inputs: { images: ["8", 0] } } })).toEqual(
      Either.left("workflow node '1' input 'images' links to node '8', which is not in it")
    )
  })

  it("finds an input by node id or by title; a linked input cannot be set", () => {
    expect(Workflow.targetOf(workflow, "6.text")).toEqual(
      Either.right({ nodeId: "6", input: "text", classType: "CLIPTextEncode", current: textToImage["6"].inputs.text })
    )
    expect(Either.map(Workflow.targetOf(workflow, "Positive.text"), (t) => t.nodeId)).toEqual(Either.right("6"))
    expect(Either.map(Workflow.targetOf(workflow, "Empty Latent Image.width"), (t) => t.current)).toEqual(
      Either.right(512)
    )
    expect(Either.isLeft(Workflow.targetOf(workflow, "3.model"))).toBe(true)
    expect(Either.isLeft(Workflow.targetOf(workflow, "Nowhere.text"))).toBe(true)
    expect(Either.isLeft(Workflow.targetOf(workflow, "text"))).toBe(true)
  })

  it("gives a value the type the workflow holds", () => {
    expect(Workflow.valueAs(20, " 30 ")).toEqual(Either.right(30))
    expect(Either.isLeft(Workflow.valueAs(20, "thirty"))).toBe(true)
    expect(Workflow.valueAs(true, "false")).toEqual(Either.right(false))
    expect(Workflow.valueAs("words", "42")).toEqual(Either.right("42"))
  })

  it("derives one canonical lowercase UUID per execution and node", () => {
    const a = Workflow.promptIdOf("0190f0a0-0000-7000-8000-000000000001", "render")
    expect(a).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-5[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/)
    expect(Workflow.promptIdOf("0190f0a0-0000-7000-8000-000000000001", "render")).toBe(a)
    expect(Workflow.promptIdOf("0190f0a0-0000-7000-8000-000000000001", "other")).not.toBe(a)
    expect(Workflow.promptIdOf("0190f0a0-0000-7000-8000-000000000002", "render")).not.toBe(a)
  })
})
