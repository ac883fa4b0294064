/**
 * Where a layered workflow (`Layering`) goes on the page, in CSS pixels: each layer is a band
 * (a column when the diagram reads across, a row when it reads down), each node a box in its
 * band, and each edge a route that leaves its source's far side, crosses the gaps between bands
 * as curves and the bands it passes as straight lines through its waypoints, and enters its
 * target's near side. A waypoint keeps a place free in its band, so an edge never passes under a
 * box; a curve stays within its gap.
 *
 * Within a band, slots are placed by a few sweeps that pull each one towards its neighbours in
 * the band before or after (the mean of their positions), keeping the order and the spacing:
 * the least-squares placement of a fixed order, found by pooling adjacent violators. The last
 * sweep goes forwards, so that each slot ends between what feeds it.
 */
import type { Layered, NodeIn, Slot } from "./Layering.js"

/** How the diagram reads: layers left to right (`across`) or top to bottom (`down`). */
export type Orientation = "across" | "down"

/** A point on the page. */
export interface Point {
  readonly x: number
  readonly y: number
}

/** A node's box. */
export interface Box<N> {
  readonly node: N
  readonly x: number
  readonly y: number
  readonly width: number
  readonly height: number
}

/**
 * An edge's route: `points[0]` on its source's side, then for each waypoint the points where it
 * enters and leaves the waypoint's band, then the point on its target's side. From each even
 * point to the next it crosses a gap (a curve); from each odd one to the next, a band (a line).
 */
export interface Route {
  readonly from: string
  readonly to: string
  readonly reversed: boolean
  readonly points: ReadonlyArray<Point>
}

/** The drawing. */
export interface Geometry<N> {
  readonly orientation: Orientation
  readonly width: number
  readonly height: number
  readonly boxes: ReadonlyArray<Box<N>>
  readonly routes: ReadonlyArray<Route>
}

/** The sizes the drawing is made with. */
export interface Sizes {
  readonly nodeWidth: number
  readonly nodeHeight: number
  /** The margin around the drawing. */
  readonly pad: number
}

/** Space kept for an edge passing through a band. */
const WAYPOINT = 6
/** Space between two boxes of a band; between a waypoint and its neighbours. */
const BOX_GAP = 20
const WAYPOINT_GAP = 12
/** Space between two bands, where edges curve: wider across, where it also parts the columns. */
const BAND_GAP: Record<Orientation, number> = { across: 56, down: 40 }
/** Most space between two edges at one side of a box (a long side across, a short one down). */
const PORT_SPACING: Record<Orientation, number> = { across: 10, down: 18 }
/** Sweeps of the placement within bands. */
const SWEEPS = 8

/** The least-squares non-decreasing fit of `values` (pool adjacent violators). */
const isotonic = (values: ReadonlyArray<number>): Array<number> => {
  const blocks: Array<{ sum: number; count: number }> = []
  for (const value of values) {
    blocks.push({ sum: value, count: 1 })
    while (blocks.length > 1) {
      const last = blocks[blocks.length - 1]!
      const before = blocks[blocks.length - 2]!
      if (before.sum / before.count <= last.sum / last.count) break
      blocks.pop()
      before.sum += last.sum
      before.count += last.count
    }
  }
  return blocks.flatMap((block) => Array.from({ length: block.count }, () => block.sum / block.count))
}

/** Lays `layered` out on the page, reading `orientation`. */
export const geometry = <N extends NodeIn>(
  layered: Layered<N>,
  orientation: Orientation,
  sizes: Sizes
): Geometry<N> => {
  const across = orientation === "across"
  // Along a band (the order axis) and across it (the rank axis).
  const boxAlong = across ? sizes.nodeHeight : sizes.nodeWidth
  const bandDepth = across ? sizes.nodeWidth : sizes.nodeHeight
  const extentOf = (slot: Slot<N>) => (slot.kind === "node" ? boxAlong : WAYPOINT)
  const separation = (a: Slot<N>, b: Slot<N>) =>
    (extentOf(a) + extentOf(b)) / 2 + (a.kind === "node" && b.kind === "node" ? BOX_GAP : WAYPOINT_GAP)

  // Each slot's neighbours in the bands before and after it, by "layer:index".
  const before = new Map<string, Array<readonly [number, number]>>()
  const after = new Map<string, Array<readonly [number, number]>>()
  const chainOf = (edge: Layered<N>["edges"][number]) => [
    layered.placeOf.get(edge.from)!,
    ...edge.waypoints,
    layered.placeOf.get(edge.to)!
  ]
  for (const edge of layered.edges) {
    const chain = chainOf(edge)
    for (let k = 0; k + 1 < chain.length; k++) {
      const upper = chain[k]!
      const lower = chain[k + 1]!
      const lowerKey = `${lower.layer}:${lower.index}`
      const upperKey = `${upper.layer}:${upper.index}`
      before.set(lowerKey, [...(before.get(lowerKey) ?? []), [upper.layer, upper.index]])
      after.set(upperKey, [...(after.get(upperKey) ?? []), [lower.layer, lower.index]])
    }
  }

  // Centres along the bands, packed to start with.
  const centre: Array<Array<number>> = layered.layers.map((band) => {
    const at: Array<number> = []
    band.forEach((slot, i) => at.push(i === 0 ? extentOf(slot) / 2 : at[i - 1]! + separation(band[i - 1]!, slot)))
    return at
  })
  const place = (
    l: number,
    neighbours: ReadonlyArray<ReadonlyMap<string, ReadonlyArray<readonly [number, number]>>>
  ) => {
    const band = layered.layers[l]!
    const offsets: Array<number> = []
    band.forEach((slot, i) => offsets.push(i === 0 ? 0 : offsets[i - 1]! + separation(band[i - 1]!, slot)))
    const wanted = band.map((_, i) => {
      const around = neighbours.flatMap((map) => map.get(`${l}:${i}`) ?? [])
      const mean = around.length === 0
        ? centre[l]![i]!
        : around.reduce((sum, [layer, index]) => sum + centre[layer]![index]!, 0) / around.length
      return mean - offsets[i]!
    })
    centre[l] = isotonic(wanted).map((shift, i) => shift + offsets[i]!)
  }
  for (let sweep = 0; sweep < SWEEPS; sweep++) {
    for (let l = 1; l < layered.layers.length; l++) place(l, [before])
    for (let l = layered.layers.length - 2; l >= 0; l--) place(l, [after])
  }
  // Last, each band under the one before it: a node sits between what feeds it, a chain runs straight.
  for (let l = 1; l < layered.layers.length; l++) place(l, [before])
  // Moved so that the drawing starts at the margin.
  const starts = layered.layers.flatMap((band, l) => band.map((slot, i) => centre[l]![i]! - extentOf(slot) / 2))
  const lowest = starts.length === 0 ? 0 : Math.min(...starts)
  const along = centre.map((band) => band.map((c) => c - lowest + sizes.pad))
  const alongEnd = Math.max(
    0,
    ...layered.layers.flatMap((band, l) => band.map((slot, i) => along[l]![i]! + extentOf(slot) / 2))
  )
  const bandStart = (l: number) => sizes.pad + l * (bandDepth + BAND_GAP[orientation])
  const point = (rank: number, order: number): Point => (across ? { x: rank, y: order } : { x: order, y: rank })

  const boxes = layered.layers.flatMap((band, l) =>
    band.flatMap((slot, i) => {
      if (slot.kind !== "node") return []
      const start = point(bandStart(l), along[l]![i]! - boxAlong / 2)
      return [{ node: slot.node, x: start.x, y: start.y, width: sizes.nodeWidth, height: sizes.nodeHeight }]
    })
  )

  // Ports: the edges at one side of a box spread along it, in the order of where they go.
  const ports = new Map<string, number>()
  const spread = (id: string, side: "out" | "in", edges: ReadonlyArray<{ index: number; towards: number }>) => {
    const at = layered.placeOf.get(id)!
    const middle = along[at.layer]![at.index]!
    const sorted = [...edges].sort((a, b) => a.towards - b.towards || a.index - b.index)
    const spacing = Math.min(PORT_SPACING[orientation], (boxAlong - 16) / Math.max(1, sorted.length - 1))
    sorted.forEach((edge, k) => ports.set(`${side}:${edge.index}`, middle + (k - (sorted.length - 1) / 2) * spacing))
  }
  const outs = new Map<string, Array<{ index: number; towards: number }>>()
  const ins = new Map<string, Array<{ index: number; towards: number }>>()
  layered.edges.forEach((edge, index) => {
    const chain = chainOf(edge)
    const next = chain[1]!
    const previous = chain[chain.length - 2]!
    outs.set(edge.from, [...(outs.get(edge.from) ?? []), { index, towards: along[next.layer]![next.index]! }])
    ins.set(edge.to, [...(ins.get(edge.to) ?? []), { index, towards: along[previous.layer]![previous.index]! }])
  })
  for (const [id, edges] of outs) spread(id, "out", edges)
  for (const [id, edges] of ins) spread(id, "in", edges)

  const routes = layered.edges.map((edge, index): Route => {
    const from = layered.placeOf.get(edge.from)!
    const to = layered.placeOf.get(edge.to)!
    const points = [point(bandStart(from.layer) + bandDepth, ports.get(`out:${index}`)!)]
    for (const waypoint of edge.waypoints) {
      const at = along[waypoint.layer]![waypoint.index]!
      points.push(point(bandStart(waypoint.layer), at), point(bandStart(waypoint.layer) + bandDepth, at))
    }
    points.push(point(bandStart(to.layer), ports.get(`in:${index}`)!))
    return { from: edge.from, to: edge.to, reversed: edge.reversed, points }
  })

  const rankEnd = layered.layers.length === 0 ? 0 : bandStart(layered.layers.length - 1) + bandDepth
  const end = point(rankEnd + sizes.pad, alongEnd + sizes.pad)
  return { orientation, width: end.x, height: end.y, boxes, routes }
}

/** The SVG path of `route`: curves across the gaps, straight lines through the bands. */
export const pathOf = (route: Route, orientation: Orientation): string => {
  const [first, ...rest] = route.points
  if (first === undefined) return ""
  const parts = [`M ${first.x} ${first.y}`]
  rest.forEach((to, k) => {
    const from = route.points[k]!
    if (k % 2 === 1) return void parts.push(`L ${to.x} ${to.y}`)
    // A curve whose control points stay between its ends along the rank axis, so it stays in its gap.
    if (orientation === "across") {
      const mid = (from.x + to.x) / 2
      parts.push(`C ${mid} ${from.y}, ${mid} ${to.y}, ${to.x} ${to.y}`)
    } else {
      const mid = (from.y + to.y) / 2
      parts.push(`C ${from.x} ${mid}, ${to.x} ${mid}, ${to.x} ${to.y}`)
    }
  })
  return parts.join(" ")
}
