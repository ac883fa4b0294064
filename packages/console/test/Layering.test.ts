/**
 * The workflow diagram's layout: layers by the longest path from the inputs, rows ordered by
 * their predecessors, every edge pointing to a later layer, cycles and unknown nodes survived.
 */
import { describe, expect, it } from "@effect/vitest"
import { FastCheck as fc } from "effect"
import { layout } from "../src/app/Layering.js"

const nodes = (...ids: Array<string>) => ids.map((id) => ({ id }))
const edge = (source: string, target: string) => ({ source, target })
const layersOf = (result: ReturnType<typeof layout>) =>
  Object.fromEntries(result.placed.map((p) => [p.node.id, p.layer]))

describe("layout", () => {
  it("puts a node one layer past the longest path to it (the Poster app)", () => {
    const result = layout(nodes("prompt", "style", "title", "render", "poster", "caption"), [
      edge("prompt", "title"),
      edge("style", "title"),
      edge("title", "render"),
      edge("render", "poster"),
      edge("title", "caption")
    ])
    expect(layersOf(result)).toEqual({ prompt: 0, style: 0, title: 1, render: 2, poster: 3, caption: 2 })
    expect(result.layers).toBe(4)
    expect(result.rows).toBe(2)
  })

  it("takes the longest path, not the shortest, when paths of two lengths meet", () => {
    const result = layout(nodes("a", "b", "c", "d"), [edge("a", "b"), edge("b", "c"), edge("a", "d"), edge("c", "d")])
    expect(layersOf(result)).toEqual({ a: 0, b: 1, c: 2, d: 3 })
  })

  it("orders a layer by the rows of the nodes' predecessors", () => {
    const result = layout(nodes("x", "y", "fromY", "fromX"), [edge("x", "fromX"), edge("y", "fromY")])
    const row = Object.fromEntries(result.placed.map((p) => [p.node.id, p.row]))
    expect(row).toEqual({ x: 0, y: 1, fromX: 0, fromY: 1 })
  })

  it("survives a cycle, a self-loop and edges to unknown nodes", () => {
    const result = layout(nodes("in", "a", "b"), [
      edge("in", "a"),
      edge("a", "b"),
      edge("b", "a"),
      edge("b", "b"),
      edge("ghost", "a")
    ])
    expect(layersOf(result)).toEqual({ in: 0, a: 1, b: 1 })
    expect(layout([], []).layers).toBe(0)
  })

  it("makes every edge of an acyclic graph point to a later layer, and no two nodes share a place", () => {
    const dag = fc.integer({ min: 1, max: 14 }).chain((n) =>
      fc.tuple(
        fc.constant(n),
        fc.array(fc.tuple(fc.nat(n - 1), fc.nat(n - 1)), { maxLength: 30 }).map((pairs) =>
          // From a lower index to a higher one: acyclic by construction.
          pairs.filter(([a, b]) => a < b).map(([a, b]) => edge(`n${a}`, `n${b}`))
        )
      )
    )
    fc.assert(fc.property(dag, ([n, edges]) => {
      const result = layout(Array.from({ length: n }, (_, i) => ({ id: `n${i}` })), edges)
      const layer = layersOf(result)
      for (const e of edges) expect(layer[e.target]!).toBeGreaterThan(layer[e.source]!)
      const places = new Set(result.placed.map((p) => `${p.layer}:${p.row}`))
      expect(places.size).toBe(n)
      for (const p of result.placed) expect(p.row).toBeLessThan(result.rows)
    }))
  })
})
