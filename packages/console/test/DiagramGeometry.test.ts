/**
 * The workflow diagram on the page: boxes never overlap, and every edge, sampled along the path
 * that is drawn, starts on its source's side, ends on its target's, and passes through no other
 * box, reading across or down, on Ken Burns and on any graph.
 */
import { describe, expect, it } from "@effect/vitest"
import { FastCheck as fc } from "effect"
import { type Box, geometry, type Orientation, pathOf, type Point } from "../src/app/diagram/DiagramGeometry.js"
import { layered, type NodeIn } from "../src/app/diagram/Layering.js"

const SIZES = { nodeWidth: 140, nodeHeight: 53, pad: 8 }
const edge = (source: string, target: string) => ({ source, target })

/** Points along an SVG path of M, L and C commands (as `pathOf` writes them). */
const sample = (d: string): Array<Point> => {
  const tokens = d.replace(/,/g, " ").trim().split(/\s+/)
  const points: Array<Point> = []
  let at: Point = { x: 0, y: 0 }
  const number = () => Number(tokens.shift())
  while (tokens.length > 0) {
    const command = tokens.shift()
    if (command === "M") {
      at = { x: number(), y: number() }
      points.push(at)
    } else if (command === "L") {
      const to = { x: number(), y: number() }
      for (let t = 0.02; t <= 1.0001; t += 0.02) {
        points.push({ x: at.x + (to.x - at.x) * t, y: at.y + (to.y - at.y) * t })
      }
      at = to
    } else if (command === "C") {
      const [c1, c2, to] = [0, 1, 2].map(() => ({ x: number(), y: number() }))
      for (let t = 0.02; t <= 1.0001; t += 0.02) {
        const u = 1 - t
        const blend = (a: number, b: number, c: number, e: number) =>
          u * u * u * a + 3 * u * u * t * b + 3 * u * t * t * c + t * t * t * e
        points.push({ x: blend(at.x, c1!.x, c2!.x, to!.x), y: blend(at.y, c1!.y, c2!.y, to!.y) })
      }
      at = to!
    } else throw new Error(`unexpected path command ${command}`)
  }
  return points
}

const inside = (p: Point, box: Box<NodeIn>, inset = 0.5) =>
  p.x > box.x + inset && p.x < box.x + box.width - inset && p.y > box.y + inset && p.y < box.y + box.height - inset

const onBorder = (p: Point, box: Box<NodeIn>) =>
  p.x >= box.x - 0.01 && p.x <= box.x + box.width + 0.01 && p.y >= box.y - 0.01 && p.y <= box.y + box.height + 0.01

/** Checks the drawing of `nodes` and `edges` read as `orientation`; its width and height. */
const check = (
  ids: ReadonlyArray<string>,
  edges: ReadonlyArray<{ source: string; target: string }>,
  o: Orientation
) => {
  const drawn = geometry(layered(ids.map((id) => ({ id })), edges), o, SIZES)
  const boxOf = new Map(drawn.boxes.map((box) => [box.node.id, box]))
  expect(boxOf.size).toBe(ids.length)
  for (const a of drawn.boxes) {
    expect(a.x).toBeGreaterThanOrEqual(0)
    expect(a.y).toBeGreaterThanOrEqual(0)
    expect(a.x + a.width).toBeLessThanOrEqual(drawn.width)
    expect(a.y + a.height).toBeLessThanOrEqual(drawn.height)
    for (const b of drawn.boxes) {
      if (a === b) continue
      const apart = a.x + a.width <= b.x || b.x + b.width <= a.x || a.y + a.height <= b.y || b.y + b.height <= a.y
      expect(apart, `${a.node.id} and ${b.node.id} overlap`).toBe(true)
    }
  }
  for (const route of drawn.routes) {
    const points = sample(pathOf(route, o))
    expect(onBorder(points[0]!, boxOf.get(route.from)!), `${route.from}→${route.to} starts on its source`).toBe(true)
    expect(onBorder(points.at(-1)!, boxOf.get(route.to)!), `${route.from}→${route.to} ends on its target`).toBe(true)
    for (const box of drawn.boxes) {
      if (box.node.id === route.from || box.node.id === route.to) continue
      const under = points.find((p) => inside(p, box))
      expect(under, `${route.from}→${route.to} passes under ${box.node.id}`).toBeUndefined()
    }
  }
  return drawn
}

describe("geometry", () => {
  it("draws Ken Burns with Image's edge beside Draw placeholder, not under it, across and down", () => {
    const ids = ["image", "prompt", "draw", "picture", "zoom", "frame", "video", "poster"]
    const edges = [
      edge("prompt", "draw"),
      edge("image", "picture"),
      edge("draw", "picture"),
      edge("picture", "zoom"),
      edge("zoom", "video"),
      edge("zoom", "frame"),
      edge("frame", "poster")
    ]
    const across = check(ids, edges, "across")
    const down = check(ids, edges, "down")
    // Six columns across; down, two boxes side by side at most.
    expect(across.width).toBe(2 * 8 + 6 * 140 + 5 * 56)
    expect(down.width).toBeLessThanOrEqual(2 * 8 + 2 * 140 + 20)
    expect(down.height).toBe(2 * 8 + 6 * 53 + 5 * 40)
  })

  it("draws a chain as a straight line", () => {
    const drawn = check(["a", "b", "c"], [edge("a", "b"), edge("b", "c")], "across")
    expect(new Set(drawn.boxes.map((box) => box.y)).size).toBe(1)
    expect(drawn.height).toBe(53 + 16)
  })

  it("routes every edge of any graph around the boxes it does not join, across and down", () => {
    const graph = fc.integer({ min: 1, max: 12 }).chain((n) =>
      fc.tuple(
        fc.constant(n),
        fc.array(fc.tuple(fc.nat(n - 1), fc.nat(n - 1)), { maxLength: 24 }).map((pairs) =>
          pairs.filter(([a, b]) => a !== b).map(([a, b]) => edge(`n${a}`, `n${b}`))
        ),
        fc.constantFrom<Orientation>("across", "down")
      )
    )
    fc.assert(
      fc.property(graph, ([n, edges, o]) => {
        check(Array.from({ length: n }, (_, i) => `n${i}`), edges, o)
      }),
      { numRuns: 150 }
    )
  })
})
