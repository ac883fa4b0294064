/**
 * The layers of a workflow diagram, as a layered (Sugiyama) drawing makes them:
 *
 * 1. cycles are broken by turning the edges that close them (a definition appexec would refuse
 *    has them; the edge is then drawn backwards, `reversed`);
 * 2. each node goes in the layer one past the longest path to it from the inputs (the nodes
 *    without incoming edges), so every edge points to a later layer;
 * 3. an edge that spans several layers gets a waypoint (a "dummy") in each layer it crosses, so
 *    that it is drawn through a place kept free for it, never under a node;
 * 4. each layer is ordered by the barycentre of its neighbours in the layer before (then after),
 *    sweeping down and up a few times and keeping the order with the fewest crossings.
 *
 * Where each slot goes on the page is `DiagramGeometry`'s business.
 */

/** A node to place. */
export interface NodeIn {
  readonly id: string
}

/** A directed edge by node ids. */
export interface EdgeIn {
  readonly source: string
  readonly target: string
}

/** One place in a layer: a node, or a waypoint of the edge at `edge` (its index in `Layered.edges`). */
export type Slot<N extends NodeIn> =
  | { readonly kind: "node"; readonly node: N }
  | { readonly kind: "waypoint"; readonly edge: number }

/**
 * An edge as it is drawn: from `from` to `to` (node ids) through `waypoints`, one a layer between
 * them, each the index of its slot in that layer. `reversed` when the definition's edge goes the
 * other way (it closed a cycle): its arrow then points at `from`.
 */
export interface LaidEdge {
  readonly from: string
  readonly to: string
  readonly reversed: boolean
  readonly waypoints: ReadonlyArray<{ readonly layer: number; readonly index: number }>
}

/** The layers, each with its slots in order, and the edges drawn between them. */
export interface Layered<N extends NodeIn> {
  readonly layers: ReadonlyArray<ReadonlyArray<Slot<N>>>
  readonly edges: ReadonlyArray<LaidEdge>
  /** Each node's layer and index in it, by id. */
  readonly placeOf: ReadonlyMap<string, { readonly layer: number; readonly index: number }>
}

/** Down-and-up sweeps of the ordering. */
const SWEEPS = 6

/** The edges of `edges` between known, distinct nodes, each pair once, with the ones closing a cycle turned. */
const acyclic = (nodes: ReadonlyArray<NodeIn>, edges: ReadonlyArray<EdgeIn>) => {
  const known = new Set(nodes.map((n) => n.id))
  const seen = new Set<string>()
  const valid = edges.filter((e) => {
    const key = `${e.source}\u0000${e.target}`
    if (!known.has(e.source) || !known.has(e.target) || e.source === e.target || seen.has(key)) return false
    seen.add(key)
    return true
  })
  const outgoing = new Map<string, Array<number>>(nodes.map((n) => [n.id, []]))
  valid.forEach((e, i) => outgoing.get(e.source)!.push(i))
  // Depth-first from each node in the definition's order: an edge to a node on the current path closes a cycle.
  const state = new Map<string, "open" | "done">()
  const closing = new Set<number>()
  for (const root of nodes) {
    if (state.has(root.id)) continue
    const stack: Array<{ id: string; next: number }> = [{ id: root.id, next: 0 }]
    state.set(root.id, "open")
    while (stack.length > 0) {
      const top = stack[stack.length - 1]!
      const out = outgoing.get(top.id)!
      if (top.next === out.length) {
        state.set(top.id, "done")
        stack.pop()
        continue
      }
      const index = out[top.next++]!
      const target = valid[index]!.target
      const seenAs = state.get(target)
      if (seenAs === "open") closing.add(index)
      else if (seenAs === undefined) {
        state.set(target, "open")
        stack.push({ id: target, next: 0 })
      }
    }
  }
  const turned = new Set<string>()
  const result: Array<{ from: string; to: string; reversed: boolean }> = []
  valid.forEach((e, i) => {
    const reversed = closing.has(i)
    const from = reversed ? e.target : e.source
    const to = reversed ? e.source : e.target
    // A turned edge beside one that already goes its way is drawn once.
    const key = `${from}\u0000${to}`
    if (turned.has(key) || (reversed && seen.has(key))) return
    turned.add(key)
    result.push({ from, to, reversed })
  })
  return result
}

/** Each node's layer: one past the longest path to it (Kahn's order over the acyclic edges). */
const layerNodes = (nodes: ReadonlyArray<NodeIn>, edges: ReadonlyArray<{ from: string; to: string }>) => {
  const incoming = new Map<string, Array<string>>(nodes.map((n) => [n.id, []]))
  const outgoing = new Map<string, Array<string>>(nodes.map((n) => [n.id, []]))
  for (const e of edges) {
    incoming.get(e.to)!.push(e.from)
    outgoing.get(e.from)!.push(e.to)
  }
  const layer = new Map<string, number>()
  const waiting = new Map(nodes.map((n) => [n.id, incoming.get(n.id)!.length]))
  const ready = nodes.filter((n) => waiting.get(n.id) === 0).map((n) => n.id)
  for (let i = 0; i < ready.length; i++) {
    const id = ready[i]!
    layer.set(id, Math.max(0, ...incoming.get(id)!.map((source) => layer.get(source)! + 1)))
    for (const target of outgoing.get(id)!) {
      const left = waiting.get(target)! - 1
      waiting.set(target, left)
      if (left === 0) ready.push(target)
    }
  }
  return layer
}

/** Crossings between two adjacent layers, given each edge between them as (upper index, lower index). */
const crossingsOf = (pairs: ReadonlyArray<readonly [number, number]>) => {
  let count = 0
  for (let i = 0; i < pairs.length; i++) {
    for (let j = i + 1; j < pairs.length; j++) {
      const [a, b] = pairs[i]!
      const [c, d] = pairs[j]!
      if ((a - c) * (b - d) < 0) count++
    }
  }
  return count
}

/** Lays `nodes` out in layers; edges naming unknown nodes, and self-loops, are left out. */
export const layered = <N extends NodeIn>(nodes: ReadonlyArray<N>, edges: ReadonlyArray<EdgeIn>): Layered<N> => {
  const drawn = acyclic(nodes, edges)
  const layerOf = layerNodes(nodes, drawn)
  const count = nodes.length === 0 ? 0 : Math.max(...layerOf.values()) + 1

  // Slots by a key: a node's id, or NUL `edge index:layer` for a waypoint (node ids are letters, digits, `_.-`).
  type Item = { readonly key: string; readonly slot: Slot<N> }
  const layers: Array<Array<Item>> = Array.from({ length: count }, () => [])
  for (const node of nodes) layers[layerOf.get(node.id)!]!.push({ key: node.id, slot: { kind: "node", node } })
  // Links between slots of adjacent layers: each edge as a chain through its waypoints.
  const links: Array<{ readonly upper: string; readonly lower: string }> = []
  const chains = drawn.map((e, i) => {
    const keys = [e.from]
    for (let l = layerOf.get(e.from)! + 1; l < layerOf.get(e.to)!; l++) {
      const key = `\u0000${i}:${l}`
      layers[l]!.push({ key, slot: { kind: "waypoint", edge: i } })
      keys.push(key)
    }
    keys.push(e.to)
    for (let k = 0; k + 1 < keys.length; k++) links.push({ upper: keys[k]!, lower: keys[k + 1]! })
    return keys
  })
  const up = new Map<string, Array<string>>()
  const down = new Map<string, Array<string>>()
  for (const { lower, upper } of links) {
    up.set(lower, [...(up.get(lower) ?? []), upper])
    down.set(upper, [...(down.get(upper) ?? []), lower])
  }

  const indexOf = new Map<string, number>()
  const reindex = (layer: ReadonlyArray<Item>) => layer.forEach((item, index) => indexOf.set(item.key, index))
  layers.forEach(reindex)
  const crossings = () => {
    let total = 0
    for (let l = 0; l + 1 < layers.length; l++) {
      const pairs = layers[l]!.flatMap((item) =>
        (down.get(item.key) ?? []).map((lower) => [indexOf.get(item.key)!, indexOf.get(lower)!] as const)
      )
      total += crossingsOf(pairs)
    }
    return total
  }
  /** Orders `layer` by the mean index of each slot's neighbours in `neighbours`; slots with none keep their place. */
  const order = (layer: Array<Item>, neighbours: ReadonlyMap<string, ReadonlyArray<string>>) => {
    const keyed = layer.map((item, index) => {
      const around = neighbours.get(item.key) ?? []
      const at = around.length === 0
        ? index
        : around.reduce((sum, key) => sum + indexOf.get(key)!, 0) / around.length
      return { item, index, at }
    })
    keyed.sort((a, b) => (a.at === b.at ? a.index - b.index : a.at - b.at))
    keyed.forEach(({ item }, index) => (layer[index] = item))
    reindex(layer)
  }
  let best = layers.map((layer) => [...layer])
  let fewest = crossings()
  for (let sweep = 0; sweep < SWEEPS && fewest > 0; sweep++) {
    for (let l = 1; l < layers.length; l++) order(layers[l]!, up)
    for (let l = layers.length - 2; l >= 0; l--) order(layers[l]!, down)
    const now = crossings()
    if (now < fewest) {
      fewest = now
      best = layers.map((layer) => [...layer])
    }
  }
  best.forEach(reindex)

  return {
    layers: best.map((layer) => layer.map((item) => item.slot)),
    edges: drawn.map((e, i) => ({
      from: e.from,
      to: e.to,
      reversed: e.reversed,
      waypoints: chains[i]!.slice(1, -1).map((key, k) => ({
        layer: layerOf.get(e.from)! + 1 + k,
        index: indexOf.get(key)!
      }))
    })),
    placeOf: new Map(nodes.map((n) => [n.id, { layer: layerOf.get(n.id)!, index: indexOf.get(n.id)! }]))
  }
}
