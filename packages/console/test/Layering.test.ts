/**
 * The workflow diagram's layers: by the longest path from the inputs, a waypoint in every layer a
 * long edge crosses, layers ordered to keep edges from crossing, cycles broken by turning the edge
 * that closes them, unknown nodes and self-loops left out.
 */
import { describe, expect, it } from "@effect/vitest"
import { FastCheck as fc } from "effect"
import { type Layered, layered, type NodeIn } from "../src/app/diagram/Layering.js"

const nodes = (...ids: Array<string>) => ids.map((id) => ({ id }))
const edge = (source: string, target: string) => ({ source, target })
const layersOf = (result: Layered<NodeIn>) =>
  Object.fromEntries([...result.placeOf].map(([id, place]) => [id, place.layer]))
const idsOf = (result: Layered<NodeIn>) =>
  result.layers.map((layer) => layer.map((slot) => (slot.kind === "node" ? slot.node.id : `~${slot.edge}`)))

/** Crossings between adjacent layers, counted from the edges' chains. */
const crossings = (result: Layered<NodeIn>) => {
  const links = result.edges.flatMap((e) => {
    const chain = [result.placeOf.get(e.from)!, ...e.waypoints, result.placeOf.get(e.to)!]
    return chain.slice(1).map((lower, k) => ({ layer: chain[k]!.layer, upper: chain[k]!.index, lower: lower.index }))
  })
  let count = 0
  for (const a of links) {
    for (const b of links) {
      if (a !== b && a.layer === b.layer && a.upper < b.upper && a.lower > b.lower) count++
    }
  }
  return count
}

/** Ken Burns (packages/server/apps/ken-burns.json). */
const kenBurns = {
  nodes: nodes("image", "prompt", "draw", "picture", "zoom", "frame", "video", "poster"),
  edges: [
    edge("prompt", "draw"),
    edge("image", "picture"),
    edge("draw", "picture"),
    edge("picture", "zoom"),
    edge("zoom", "video"),
    edge("zoom", "frame"),
    edge("frame", "poster")
  ]
}

describe("layered", () => {
  it("puts a node one layer past the longest path to it (the Poster app)", () => {
    const result = layered(nodes("prompt", "style", "title", "render", "poster", "caption"), [
      edge("prompt", "title"),
      edge("style", "title"),
      edge("title", "render"),
      edge("render", "poster"),
      edge("title", "caption")
    ])
    expect(layersOf(result)).toEqual({ prompt: 0, style: 0, title: 1, render: 2, poster: 3, caption: 2 })
    expect(result.layers).toHaveLength(4)
  })

  it("takes the longest path, not the shortest, when paths of two lengths meet", () => {
    const result = layered(nodes("a", "b", "c", "d"), [edge("a", "b"), edge("b", "c"), edge("a", "d"), edge("c", "d")])
    expect(layersOf(result)).toEqual({ a: 0, b: 1, c: 2, d: 3 })
  })

  it("gives a long edge a waypoint in each layer it crosses: Ken Burns's Image passes beside Draw placeholder", () => {
    const result = layered(kenBurns.nodes, kenBurns.edges)
    expect(layersOf(result)).toMatchObject({ image: 0, prompt: 0, draw: 1, picture: 2, zoom: 3, poster: 5 })
    const long = result.edges.find((e) => e.from === "image")!
    expect(long.waypoints.map((w) => w.layer)).toEqual([1])
    expect(result.layers[1]![long.waypoints[0]!.index]).toEqual({ kind: "waypoint", edge: result.edges.indexOf(long) })
    expect(idsOf(result)[1]).toHaveLength(2)
    expect(crossings(result)).toBe(0)
  })

  it("orders a layer by its neighbours, so that edges do not cross", () => {
    const result = layered(nodes("x", "y", "fromY", "fromX"), [edge("x", "fromX"), edge("y", "fromY")])
    expect(idsOf(result)).toEqual([["x", "y"], ["fromX", "fromY"]])
    const crossed = layered(nodes("a", "b", "c", "toC", "toB", "toA"), [
      edge("a", "toA"),
      edge("b", "toB"),
      edge("c", "toC")
    ])
    expect(crossings(crossed)).toBe(0)
  })

  it("turns the edge that closes a cycle, and leaves out self-loops and unknown nodes", () => {
    const result = layered(nodes("in", "a", "b"), [
      edge("in", "a"),
      edge("a", "b"),
      edge("b", "a"),
      edge("b", "b"),
      edge("ghost", "a")
    ])
    expect(layersOf(result)).toEqual({ in: 0, a: 1, b: 2 })
    // b → a goes the way of a → b, which is drawn already: it is drawn once.
    expect(result.edges.map((e) => `${e.from}>${e.to}${e.reversed ? " (turned)" : ""}`)).toEqual(["in>a", "a>b"])
    const loop = layered(nodes("p", "q", "r"), [edge("p", "q"), edge("q", "r"), edge("r", "p")])
    expect(loop.edges.filter((e) => e.reversed).map((e) => `${e.from}>${e.to}`)).toEqual(["p>r"])
    expect(layered([], []).layers).toHaveLength(0)
  })

  it("makes every edge point to a later layer through one waypoint a layer between, each slot used once", () => {
    const graph = fc.integer({ min: 1, max: 14 }).chain((n) =>
      fc.tuple(
        fc.constant(n),
        fc.array(fc.tuple(fc.nat(n - 1), fc.nat(n - 1)), { maxLength: 30 }).map((pairs) =>
          pairs.map(([a, b]) => edge(`n${a}`, `n${b}`))
        )
      )
    )
    fc.assert(fc.property(graph, ([n, edges]) => {
      const result = layered(Array.from({ length: n }, (_, i) => ({ id: `n${i}` })), edges)
      const used = new Set<string>()
      for (const [id, place] of result.placeOf) {
        expect(result.layers[place.layer]![place.index]).toMatchObject({ kind: "node", node: { id } })
        used.add(`${place.layer}:${place.index}`)
      }
      result.edges.forEach((e, i) => {
        const from = result.placeOf.get(e.from)!.layer
        const to = result.placeOf.get(e.to)!.layer
        expect(to).toBeGreaterThan(from)
        expect(e.waypoints.map((w) => w.layer)).toEqual(Array.from({ length: to - from - 1 }, (_, k) => from + 1 + k))
        for (const w of e.waypoints) {
          expect(result.layers[w.layer]![w.index]).toEqual({ kind: "waypoint", edge: i })
          used.add(`${w.layer}:${w.index}`)
        }
      })
      expect(used.size).toBe(result.layers.reduce((sum, layer) => sum + layer.length, 0))
    }))
  })
})
