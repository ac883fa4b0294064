/**
 * An app's workflow drawn as a layered diagram in SVG (`Layering`, `DiagramGeometry`): the inputs
 * first, each node one layer past the longest path to it, edges as arrows routed through places
 * kept free for them, never under a box. It is drawn at its size, never shrunk (its text stays
 * 11 px and more): it reads left to right when that fits its panel, else top to bottom when that
 * is narrower, and scrolls inside its panel when neither fits. Labels are wrapped to two lines
 * and cut with "…" beyond (the whole in the node's tooltip); SVG text is escaped like any text. A
 * list of the steps under it says the same for screen readers.
 */
import { useLayoutEffect, useMemo, useRef, useState } from "preact/hooks"
import type { WorkflowGraph } from "../api/Wire.js"
import { geometry, type Orientation, pathOf } from "./DiagramGeometry.js"
import { layered } from "./Layering.js"
import { canvasMeasure, ellipsis, wrap } from "./TextFit.js"

const NODE_WIDTH = 140
const PAD = 8
/** Space between a box's border and its text. */
const INSET = 10
const LABEL = { size: 13, weight: 600, line: 16, lines: 2 }
const TYPE = { size: 11, line: 16, baseline: 12, family: "ui-monospace, SFMono-Regular, Menlo, Consolas, monospace" }
/** Room left unused at a text's end: a measure and the drawn text may differ a little. */
const SLACK = 4

/** Where a node's text starts so that its label and type stand in the middle of its box. */
const top = (lines: number, height: number) => (height - lines * LABEL.line - TYPE.line) / 2

/** The kind of a node, for its colour: an input, an output, or a step. */
const kindOf = (type: string) => (type.startsWith("input.") ? "input" : type.startsWith("output.") ? "output" : "step")

/** The drawing of `graph` in both orientations, its labels fitted in the page's fonts. */
const draw = (graph: WorkflowGraph) => {
  const family = getComputedStyle(document.documentElement).fontFamily
  const labelMeasure = canvasMeasure(`${LABEL.weight} ${LABEL.size}px ${family}`, LABEL.size)
  const typeMeasure = canvasMeasure(`${TYPE.size}px ${TYPE.family}`, TYPE.size)
  const room = NODE_WIDTH - 2 * INSET - SLACK
  const nodes = graph.nodes.map((node) => {
    const label = wrap(node.label, room, LABEL.lines, labelMeasure)
    const type = ellipsis(node.type, room, typeMeasure)
    return { ...node, lines: label.lines, typeLine: type.lines[0] ?? "" }
  })
  const lines = Math.max(1, ...nodes.map((node) => node.lines.length))
  const sizes = { nodeWidth: NODE_WIDTH, nodeHeight: 2 * INSET + lines * LABEL.line + TYPE.line, pad: PAD }
  const layers = layered(nodes, graph.edges)
  return {
    lines,
    across: geometry(layers, "across", sizes),
    down: geometry(layers, "down", sizes)
  }
}

/** The diagram of `graph`. */
export const WorkflowDiagram = ({ graph }: { readonly graph: WorkflowGraph }) => {
  const frame = useRef<HTMLDivElement>(null)
  // The width of the panel, once known: the orientation is chosen by it.
  const [room, setRoom] = useState<number | undefined>(undefined)
  useLayoutEffect(() => {
    const element = frame.current
    if (element === null) return
    setRoom(element.clientWidth)
    const observer = new ResizeObserver(() => setRoom(element.clientWidth))
    observer.observe(element)
    return () => observer.disconnect()
  }, [])
  const drawing = useMemo(() => draw(graph), [graph])
  const orientation: Orientation = room === undefined || drawing.across.width <= room
    ? "across"
    : drawing.down.width < drawing.across.width
    ? "down"
    : "across"
  const shown = drawing[orientation]
  const scrolls = room !== undefined && shown.width > room
  const labelOf = new Map(graph.nodes.map((n) => [n.id, n.label]))
  const titleId = `workflow-title-${graph.appId}`
  const arrow = `arrow-${graph.appId}`
  return (
    <figure class="workflow">
      <div
        class="diagram-scroll"
        ref={frame}
        tabIndex={scrolls ? 0 : undefined}
        role={scrolls ? "region" : undefined}
        aria-label={scrolls ? "Workflow diagram (scrolls)" : undefined}
      >
        <svg
          viewBox={`0 0 ${shown.width} ${shown.height}`}
          width={shown.width}
          height={shown.height}
          role="img"
          aria-labelledby={titleId}
          data-testid="workflow-diagram"
          data-orientation={orientation}
        >
          <title id={titleId}>
            Workflow of {graph.name}: {graph.nodes.length} nodes, {graph.edges.length} edges
          </title>
          <defs>
            <marker
              id={arrow}
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
          {shown.routes.map((route) => (
            <path
              key={`${route.from}->${route.to}`}
              class="edge"
              d={pathOf(route, orientation)}
              data-source={route.reversed ? route.to : route.from}
              data-target={route.reversed ? route.from : route.to}
              marker-end={route.reversed ? undefined : `url(#${arrow})`}
              marker-start={route.reversed ? `url(#${arrow})` : undefined}
            />
          ))}
          {shown.boxes.map(({ height, node, x, y }) => (
            <g
              key={node.id}
              class={`node ${kindOf(node.type)}`}
              transform={`translate(${x} ${y})`}
              data-node={node.id}
            >
              <title>
                {node.label} ({node.type})
              </title>
              <rect width={NODE_WIDTH} height={height} rx="8" />
              <text class="node-label" font-size={LABEL.size} font-weight={LABEL.weight}>
                {node.lines.map((line, i) => (
                  <tspan key={i} x={INSET} y={top(node.lines.length, height) + LABEL.size + i * LABEL.line}>
                    {line}
                  </tspan>
                ))}
              </text>
              <text
                class="node-type"
                x={INSET}
                y={top(node.lines.length, height) + node.lines.length * LABEL.line + TYPE.baseline}
                font-size={TYPE.size}
                font-family={TYPE.family}
              >
                {node.typeLine}
              </text>
            </g>
          ))}
        </svg>
      </div>
      {scrolls && <p class="help">The workflow is wider than its panel: scroll it sideways.</p>}
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
