/**
 * The workflow graph of an app (docs/api.md#workflow-graph): its nodes and edges, a node that
 * shows inner steps (`NodeType.InnerGraph`, a ComfyUI workflow) replaced by them — ids
 * `<node>/<step>` — with the edges into it going to the steps its upstream nodes feed and the
 * edges out of it leaving from its exit steps.
 */
import type { WorkflowEdge, WorkflowNode } from "@appexec/api/App"
import type { CompiledApp } from "../../AppDefinition.js"
import type { InnerGraph } from "../../NodeType.js"

/** The nodes and edges the workflow graph of `compiled` shows. */
export const graphOf = (
  compiled: CompiledApp
): { readonly nodes: ReadonlyArray<WorkflowNode>; readonly edges: ReadonlyArray<WorkflowEdge> } => {
  const inner = new Map<string, InnerGraph>()
  for (const node of compiled.nodes) if (node.compiled.graph !== undefined) inner.set(node.id, node.compiled.graph)
  const nodes: Array<WorkflowNode> = []
  const edges: Array<WorkflowEdge> = []
  for (const n of compiled.definition.nodes) {
    const graph = inner.get(n.id)
    if (graph === undefined) {
      nodes.push({ id: n.id, type: n.type, label: n.label ?? n.id })
      continue
    }
    for (const step of graph.nodes) nodes.push({ id: `${n.id}/${step.id}`, type: step.type, label: step.label })
    for (const e of graph.edges) edges.push({ source: `${n.id}/${e.source}`, target: `${n.id}/${e.target}` })
  }
  /** The steps without an inner edge in, where an upstream node that names none enters. */
  const heads = (id: string, graph: InnerGraph) =>
    graph.nodes.map((s) => s.id).filter((s) => !graph.edges.some((e) => e.target === s)).map((s) => `${id}/${s}`)
  for (const edge of compiled.edges) {
    const from = inner.get(edge.source)
    const to = inner.get(edge.target)
    const sources = from === undefined ? [edge.source] : from.exits.map((s) => `${edge.source}/${s}`)
    const named = to?.entries(edge.source).map((s) => `${edge.target}/${s}`)
    const targets = to === undefined
      ? [edge.target]
      : named !== undefined && named.length > 0
      ? named
      : heads(edge.target, to)
    for (const source of sources) for (const target of targets) edges.push({ source, target })
  }
  return { nodes, edges }
}
