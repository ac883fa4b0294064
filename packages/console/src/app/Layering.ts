/**
 * The layout of a workflow diagram: nodes in layers from left to right, each node's layer the
 * longest path to it from the inputs (nodes without incoming edges), so every edge points right.
 * Within a layer, nodes are ordered by the mean row of their predecessors (one barycentre pass),
 * which keeps most edges from crossing. Nodes on a cycle (a definition appexec would refuse)
 * go one layer past the rest rather than looping.
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

/** A placed node: its layer (column) and row, from 0. */
export interface Placed<N extends NodeIn> {
  readonly node: N
  readonly layer: number
  readonly row: number
}

/** The layers of the nodes, and how many layers and rows the diagram has. */
export interface Layout<N extends NodeIn> {
  readonly placed: ReadonlyArray<Placed<N>>
  readonly layers: number
  readonly rows: number
}

/** Places `nodes`: edges naming unknown nodes are ignored. */
export const layout = <N extends NodeIn>(nodes: ReadonlyArray<N>, edges: ReadonlyArray<EdgeIn>): Layout<N> => {
  const known = new Set(nodes.map((n) => n.id))
  const valid = edges.filter((e) => known.has(e.source) && known.has(e.target) && e.source !== e.target)
  const incoming = new Map<string, Array<string>>(nodes.map((n) => [n.id, []]))
  const outgoing = new Map<string, Array<string>>(nodes.map((n) => [n.id, []]))
  for (const edge of valid) {
    incoming.get(edge.target)!.push(edge.source)
    outgoing.get(edge.source)!.push(edge.target)
  }
  // Longest path, in topological order (Kahn): a node's layer is one past its furthest predecessor.
  const layer = new Map<string, number>()
  const waiting = new Map(nodes.map((n) => [n.id, incoming.get(n.id)!.length]))
  const ready = nodes.filter((n) => waiting.get(n.id) === 0).map((n) => n.id)
  for (let i = 0; i < ready.length; i++) {
    const id = ready[i]!
    const own = Math.max(0, ...incoming.get(id)!.map((source) => (layer.get(source) ?? -1) + 1))
    layer.set(id, own)
    for (const target of outgoing.get(id)!) {
      const left = waiting.get(target)! - 1
      waiting.set(target, left)
      if (left === 0) ready.push(target)
    }
  }
  const deepest = Math.max(-1, ...layer.values())
  for (const node of nodes) if (!layer.has(node.id)) layer.set(node.id, deepest + 1)

  const layers = nodes.length === 0 ? 0 : Math.max(...layer.values()) + 1
  const columns: Array<Array<N>> = Array.from({ length: layers }, () => [])
  for (const node of nodes) columns[layer.get(node.id)!]!.push(node)
  const row = new Map<string, number>()
  for (const column of columns) {
    const barycentre = (node: N) => {
      const rows = incoming.get(node.id)!.map((source) => row.get(source)).filter((r) => r !== undefined)
      return rows.length === 0 ? Number.POSITIVE_INFINITY : rows.reduce((a, b) => a + b, 0) / rows.length
    }
    const keyed = column.map((node, index) => ({ node, index, at: barycentre(node) }))
    // Stable: nodes without placed predecessors keep the definition's order.
    keyed.sort((a, b) => (a.at === b.at ? a.index - b.index : a.at < b.at ? -1 : 1))
    keyed.forEach(({ node }, index) => row.set(node.id, index))
  }
  return {
    placed: nodes.map((node) => ({ node, layer: layer.get(node.id)!, row: row.get(node.id)! })),
    layers,
    rows: Math.max(0, ...columns.map((c) => c.length))
  }
}
