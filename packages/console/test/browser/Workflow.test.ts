/**
 * Workflow graphs that read, in a real Chromium against the compiled `appexec serve`: Ken Burns
 * (eight nodes, six layers) and Twelve steps (an app of this test's with twelve nodes, seven
 * layers, edges that skip layers and a label too long for its box), each on a 1280-pixel screen
 * and on a phone's. Measured in the page as drawn: no text under 11 pixels, every label inside its
 * box (a long one wrapped, or cut with its whole text in the node's tooltip), no edge passing over
 * a box it does not join (each edge sampled every two pixels along its path), and the page no
 * wider than the screen (a diagram wider than its panel scrolls inside it).
 */
import { expect, layer } from "@effect/vitest"
import { Effect, Layer } from "effect"
import * as Chromium from "../support/Chromium.js"
import * as ConsolePage from "../support/ConsolePage.js"
import { diagramOf, fitOf } from "../support/PageGeometry.js"
import * as ServedConsole from "../support/ServedConsole.js"

/** A label longer than two lines of a box. */
const LONG_LABEL = "Summarise the whole story for the back cover in a single line"

const text = (id: string, label: string, template: string) => ({
  id,
  type: "text.template",
  label,
  config: { template }
})

/** Twelve nodes in seven layers; Tone, Title and Audience reach past the layer after theirs. */
const twelveSteps = {
  name: "Twelve steps",
  description: "Writes a short story in twelve steps (a test app of the workflow diagram).",
  nodes: [
    { id: "topic", type: "input.text", label: "Topic", config: { name: "topic", required: true } },
    {
      id: "audience",
      type: "input.options",
      label: "Audience",
      config: { name: "audience", options: ["children", "adults"], default: "adults" }
    },
    { id: "tone", type: "input.text", label: "Tone", config: { name: "tone" } },
    text("outline", "Outline", "{{topic}} for {{audience}}"),
    text("title", "Title", "{{topic}}"),
    text("draft", "Draft the story", "{{outline}}, {{tone}}"),
    text("polish", "Polish the draft for reading aloud", "{{draft}}"),
    text("summary", LONG_LABEL, "{{title}}: {{polish}}"),
    text("byline", "Byline", "{{summary}} (for {{audience}})"),
    { id: "story", type: "output.text", label: "Story" },
    { id: "heading", type: "output.text", label: "Heading" },
    { id: "blurb", type: "output.text", label: "Blurb" }
  ],
  edges: [
    ["topic", "outline"],
    ["audience", "outline"],
    ["topic", "title"],
    ["outline", "draft"],
    ["tone", "draft"],
    ["draft", "polish"],
    ["polish", "summary"],
    ["title", "summary"],
    ["summary", "byline"],
    ["audience", "byline"],
    ["polish", "story"],
    ["title", "heading"],
    ["byline", "blurb"]
  ].map(([source, target]) => ({ source, target }))
}

const served = Layer.merge(ServedConsole.layerWith({ "twelve-steps.json": twelveSteps }), Chromium.layer)

/** Opens `app` on a screen of `size`, checks its diagram and the page's width: the diagram as read. */
const readDiagram = (app: string, size: { readonly width: number; readonly height: number }, shot: string) =>
  Effect.gen(function*() {
    const tab = yield* ConsolePage.open()
    yield* tab.resize(size)
    yield* tab.signIn()
    yield* tab.openApp(app)
    const diagram = yield* Effect.promise(() => diagramOf(tab.page))
    expect(diagram.smallestText).toBeGreaterThanOrEqual(11)
    expect(diagram.labelsOutside).toEqual([])
    expect(diagram.edgesUnder).toEqual([])
    // The diagram scrolls inside its panel, which fits the screen, as the page does.
    expect(diagram.panelRight).toBeLessThanOrEqual(size.width)
    const fit = yield* Effect.promise(() => fitOf(tab.page))
    expect(fit.overflowing).toEqual([])
    expect(fit.scrollWidth).toBeLessThanOrEqual(size.width)
    yield* tab.screenshot(shot)
    expect(tab.errors).toEqual([])
    return diagram
  })

layer(served, { timeout: "90 seconds", excludeTestServices: true })("workflow graphs that read", (it) => {
  it.scoped(
    "draws Ken Burns at full size, its labels in their boxes and its edges clear of other boxes",
    () =>
      Effect.gen(function*() {
        const wide = yield* readDiagram("Ken Burns", ConsolePage.DESKTOP, "workflow-ken-burns")
        expect(wide.texts).toBe(2 * 8)
        expect(wide.edges).toBe(7)
        // "Image or placeholder" is wrapped, not run out of its box.
        expect(wide.labels["picture"]!.join(" ")).toBe("Image or placeholder")
        expect(wide.titles["picture"]).toBe("Image or placeholder (util.first)")
        // Drawn at its size: six layers across do not fit beside the form, so it reads down.
        expect(wide.orientation).toBe("down")
        expect(wide.width).toBeLessThanOrEqual(wide.panelWidth)

        const phone = yield* readDiagram("Ken Burns", ConsolePage.PHONE, "workflow-ken-burns-phone")
        expect(phone.orientation).toBe("down")
        expect(phone.width).toBeLessThanOrEqual(phone.panelWidth)
      }),
    60_000
  )

  it.scoped(
    "draws a twelve-node app readably, a label too long for its box cut with its whole text on hover",
    () =>
      Effect.gen(function*() {
        const wide = yield* readDiagram("Twelve steps", ConsolePage.DESKTOP, "workflow-twelve-steps")
        expect(wide.edges).toBe(13)
        expect(Object.keys(wide.titles)).toHaveLength(12)
        expect(wide.labels["summary"]!.length).toBe(2)
        expect(wide.labels["summary"]!.at(-1)).toMatch(/…$/)
        expect(wide.titles["summary"]).toBe(`${LONG_LABEL} (text.template)`)

        // On a phone it is wider than its panel: it scrolls there, the page does not.
        const phone = yield* readDiagram("Twelve steps", ConsolePage.PHONE, "workflow-twelve-steps-phone")
        expect(phone.width).toBeGreaterThan(phone.panelWidth)
      }),
    60_000
  )
})
