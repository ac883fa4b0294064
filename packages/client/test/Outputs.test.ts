import type { Execution } from "@appexec/api"
import { describe, expect, it } from "@effect/vitest"
import { Outputs } from "../src/index.js"

const output = (o: Partial<Execution.Output> & Pick<Execution.Output, "id" | "label">): Execution.Output => ({
  type: "pending",
  value: null,
  status: "pending",
  error: null,
  ...o
})

const execution = {
  outputs: [
    output({ id: "poster", label: "Poster", type: "image", value: "https://cdn.example/p.png", status: "completed" }),
    output({ id: "caption", label: "Caption", type: "text", value: "A cat", status: "completed" }),
    output({ id: "clip", label: "Clip", type: "video", status: "failed", error: "render failed" }),
    output({ id: "data", label: "Data", type: "json", value: "{\"n\":1}", status: "completed" }),
    output({ id: "later", label: "Later" })
  ]
}

describe("Outputs", () => {
  it("narrows every output to what it holds, never assuming an image", () => {
    expect(Outputs.all(execution).map((v) => v.kind)).toEqual(["media", "text", "failed", "json", "pending"])
    expect(Outputs.read(execution, "Poster")).toMatchObject({
      kind: "media",
      mediaType: "image",
      url: "https://cdn.example/p.png"
    })
    expect(Outputs.read(execution, "clip")).toMatchObject({ kind: "failed", error: "render failed" })
    expect(Outputs.read(execution, "Data")).toMatchObject({ kind: "json", value: { n: 1 } })
  })

  it("finds by id first, then by label", () => {
    const clash = {
      outputs: [
        output({ id: "a", label: "b", type: "text", value: "by label", status: "completed" }),
        output({ id: "b", label: "c", type: "text", value: "by id", status: "completed" })
      ]
    }
    expect(Outputs.text(clash, "b")).toBe("by id")
    expect(Outputs.text(clash, "a")).toBe("by label")
    expect(Outputs.find(clash, "zzz")).toBeUndefined()
  })

  it("gives text only for text and URLs only for media", () => {
    expect(Outputs.text(execution, "Caption")).toBe("A cat")
    expect(Outputs.mediaUrl(execution, "Caption")).toBeUndefined()
    expect(Outputs.mediaUrl(execution, "Poster")).toBe("https://cdn.example/p.png")
    expect(Outputs.text(execution, "Poster")).toBeUndefined()
    expect(Outputs.mediaUrl(execution, "Clip")).toBeUndefined()
  })

  it("describes each output in one line", () => {
    expect(Outputs.all(execution).map(Outputs.describe)).toEqual([
      "Poster (image): https://cdn.example/p.png",
      "Caption (text): A cat",
      "Clip: failed: render failed",
      "Data (json): {\"n\":1}",
      "Later: pending"
    ])
  })
})
