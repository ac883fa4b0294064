/**
 * An app's workflow drawn as a layered diagram in SVG (`Layering`): the inputs on the left, each
 * node one column past the longest path to it, edges as arrows. Labels are SVG text (escaped like
 * any text); a list of the steps under it says the same for screen readers.
 */
import { layout } from "./Layering.js"
import type { WorkflowGraph } from "./Wire.js"

const NODE_WIDTH = 156
const NODE_HEIGHT = 48
const GAP_X = 40
const GAP_Y = 20
const PAD = 8
/** Characters of a label that fit in a node; longer ones are cut (the whole is in its tooltip). */
const LABEL_CHARS = 20

/** Width under which a diagram is not shrunk further on a narrow screen: it scrolls instead. */
const NARROWEST = 520

const fit = (text: string, chars: number) => (text.length <= chars ? text : `${text.slice(0, chars - 1)}…`)

/** The kind of a node, for its colour: an input, an output, or a step. */
const kindOf = (type: string) => (type.startsWith("input.") ? "input" : type.startsWith("output.") ? "output" : "step")

/** The diagram of `graph`. */
export const WorkflowDiagram = ({ graph }: { readonly graph: WorkflowGraph }) => {
  const { layers, placed, rows } = layout(graph.nodes, graph.edges)
  const height = Math.max(1, rows) * (NODE_HEIGHT + GAP_Y) - GAP_Y + 2 * PAD
  const width = Math.max(1, layers) * (NODE_WIDTH + GAP_X) - GAP_X + 2 * PAD
  const columnRows = new Map<number, number>()
  for (const p of placed) columnRows.set(p.layer, Math.max(columnRows.get(p.layer) ?? 0, p.row + 1))
  const position = new Map(
    placed.map((p) => {
      // Each column is centred on the tallest one.
      const offset = ((rows - (columnRows.get(p.layer) ?? 1)) * (NODE_HEIGHT + GAP_Y)) / 2
      return [p.node.id, { x: PAD + p.layer * (NODE_WIDTH + GAP_X), y: PAD + offset + p.row * (NODE_HEIGHT + GAP_Y) }]
    })
  )
  const labelOf = new Map(graph.nodes.map((n) => [n.id, n.label]))
  const titleId = `workflow-title-${graph.appId}`
  return (
    <figure class="workflow">
      <div class="diagram-scroll">
        <svg
          viewBox={`0 0 ${width} ${height}`}
          width={width}
          height={height}
          role="img"
          class={width > NARROWEST ? "wide" : undefined}
          aria-labelledby={titleId}
          data-testid="workflow-diagram"
        >
          <title id={titleId}>
            Workflow of {graph.name}: {graph.nodes.length} nodes, {graph.edges.length} edges
          </title>
          <defs>
            <marker
              id={`arrow-${graph.appId}`}
              viewBox="0 0 10 10"
              refX="9"
              refY="5"
              markerWidth="7"
              markerHeight="7"
              orient="auto-start-reverse"
            >
              <path d="M 0 0 L 10 5 L 0 10 z" class="arrow-head" />
            </marker>
          </defs>
          {graph.edges.map((edge) => {
            const from = position.get(edge.source)
            const to = position.get(edge.target)
            if (from === undefined || to === undefined) return null
            const x1 = from.x + NODE_WIDTH
            const y1 = from.y + NODE_HEIGHT / 2
            const x2 = to.x - 2
            const y2 = to.y + NODE_HEIGHT / 2
            const bend = Math.max(24, (x2 - x1) / 2)
            return (
              <path
                key={`${edge.source}->${edge.target}`}
                class="edge"
                d={`M ${x1} ${y1} C ${x1 + bend} ${y1}, ${x2 - bend} ${y2}, ${x2} ${y2}`}
                marker-end={`url(#arrow-${graph.appId})`}
              />
            )
          })}
          {placed.map(({ node }) => {
            const at = position.get(node.id)!
            return (
              <g key={node.id} class={`node ${kindOf(node.type)}`} transform={`translate(${at.x} ${at.y})`}>
                <title>
                  {node.label} ({node.type})
                </title>
                <rect width={NODE_WIDTH} height={NODE_HEIGHT} rx="8" />
                <text x="12" y="20" class="node-label">
                  {fit(node.label, LABEL_CHARS)}
                </text>
                <text x="12" y="37" class="node-type">
                  {fit(node.type, LABEL_CHARS + 4)}
                </text>
              </g>
            )
          })}
        </svg>
      </div>
      <figcaption class="visually-hidden">
        <ul>
          {graph.edges.map((edge) => (
            <li key={`${edge.source}->${edge.target}`}>
              {labelOf.get(edge.source) ?? edge.source} → {labelOf.get(edge.target) ?? edge.target}
            </li>
          ))}
        </ul>
      </figcaption>
    </figure>
  )
}
