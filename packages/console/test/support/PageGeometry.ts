/**
 * What a tab's page looks like, measured in it (`getBoundingClientRect`, `getComputedStyle`, the
 * SVG's own geometry): whether anything is wider than the screen, and whether a workflow diagram
 * is readable (its text size once drawn, its labels inside their boxes, its edges clear of the
 * boxes they do not join). Each function runs in the page and returns plain data to assert on.
 */
import type { Page } from "puppeteer-core"

/** An element that reaches past the screen's right edge: a CSS path to it and how far it reaches. */
export interface Overflow {
  readonly element: string
  readonly right: number
}

/** The page's width against the screen's, and the elements that reach past the screen. */
export interface Fit {
  readonly scrollWidth: number
  readonly innerWidth: number
  readonly overflowing: ReadonlyArray<Overflow>
}

/**
 * Measures whether the page fits its screen: `document.documentElement.scrollWidth`, and every
 * element whose right edge is past the screen's, unless a scrolling (or clipping) box it is in
 * holds it, which itself fits. Visually hidden elements (clipped to a pixel) are left out.
 */
export const fitOf = (page: Page): Promise<Fit> =>
  page.evaluate(() => {
    const width = window.innerWidth
    const describe = (element: Element) => {
      const parts: Array<string> = []
      for (
        let at: Element | null = element;
        at !== null && at !== document.body && parts.length < 4;
        at = at.parentElement
      ) {
        const testId = at.getAttribute("data-testid")
        parts.unshift(
          `${at.tagName.toLowerCase()}${at.id === "" ? "" : `#${at.id}`}${
            testId === null ? "" : `[data-testid=${testId}]`
          }${
            typeof at.className === "string" && at.className !== ""
              ? `.${at.className.trim().split(/\s+/).join(".")}`
              : ""
          }`
        )
      }
      return parts.join(" > ")
    }
    /** Whether a box between `element` and the page scrolls or clips what is in it. */
    const heldByScroller = (element: Element) => {
      for (let at = element.parentElement; at !== null && at !== document.body; at = at.parentElement) {
        const style = getComputedStyle(at)
        if (style.overflowX !== "visible") return true
        if (style.clip !== "auto" && style.clip !== "") return true
      }
      return false
    }
    const overflowing: Array<{ element: string; right: number }> = []
    for (const element of document.body.querySelectorAll("*")) {
      const box = element.getBoundingClientRect()
      if (box.width === 0 || box.height === 0 || box.right <= width + 0.5) continue
      if (heldByScroller(element)) continue
      overflowing.push({ element: describe(element), right: Math.round(box.right) })
    }
    return { scrollWidth: document.documentElement.scrollWidth, innerWidth: width, overflowing }
  })

/** A workflow diagram as drawn. */
export interface DiagramReading {
  readonly orientation: string | null
  /** The smallest text on it, in CSS pixels once drawn (its font size times the SVG's scale). */
  readonly smallestText: number
  readonly texts: number
  /** Labels (or type lines) that reach outside their box: the node and by how much. */
  readonly labelsOutside: ReadonlyArray<{ readonly node: string; readonly text: string; readonly by: number }>
  /** Edges with a point inside a box they do not join. */
  readonly edgesUnder: ReadonlyArray<{ readonly edge: string; readonly box: string }>
  readonly edges: number
  /** The full text of each node's tooltip, by node id. */
  readonly titles: Readonly<Record<string, string>>
  /** The lines of each node's label, by node id. */
  readonly labels: Readonly<Record<string, ReadonlyArray<string>>>
  /** The diagram's width and that of the box that scrolls it, and whether it fits the screen. */
  readonly width: number
  readonly panelWidth: number
  readonly panelRight: number
}

/** Reads the workflow diagram of the page, every edge sampled every two pixels along its drawn path. */
export const diagramOf = (page: Page): Promise<DiagramReading> =>
  page.$eval("[data-testid='workflow-diagram']", (element) => {
    const svg = element as SVGSVGElement
    const scale = svg.getScreenCTM()?.a ?? 1
    const texts = [...svg.querySelectorAll("text")]
    const smallestText = Math.min(...texts.map((text) => parseFloat(getComputedStyle(text).fontSize) * scale))
    const nodes = [...svg.querySelectorAll<SVGGElement>("g.node")]
    const boxOf = new Map(
      nodes.map((node) => [node.dataset.node ?? "", node.querySelector("rect")!.getBoundingClientRect()])
    )
    const labelsOutside: Array<{ node: string; text: string; by: number }> = []
    for (const node of nodes) {
      const box = boxOf.get(node.dataset.node ?? "")!
      for (const text of node.querySelectorAll("text")) {
        const drawn = text.getBoundingClientRect()
        const by = Math.max(
          box.left - drawn.left,
          drawn.right - box.right,
          box.top - drawn.top,
          drawn.bottom - box.bottom
        )
        if (by > 0.5) labelsOutside.push({ node: node.dataset.node ?? "", text: text.textContent ?? "", by })
      }
    }
    const edgesUnder: Array<{ edge: string; box: string }> = []
    const paths = [...svg.querySelectorAll<SVGPathElement>("path.edge")]
    for (const path of paths) {
      const joined = new Set([path.dataset.source, path.dataset.target])
      const matrix = path.getScreenCTM()!
      const length = path.getTotalLength()
      const points: Array<{ x: number; y: number }> = []
      for (let at = 0; at <= length; at += 2) {
        const p = path.getPointAtLength(at)
        points.push({ x: matrix.a * p.x + matrix.c * p.y + matrix.e, y: matrix.b * p.x + matrix.d * p.y + matrix.f })
      }
      for (const [id, box] of boxOf) {
        if (joined.has(id)) continue
        const under = points.some((p) =>
          p.x > box.left + 0.5 && p.x < box.right - 0.5 && p.y > box.top + 0.5 && p.y < box.bottom - 0.5
        )
        if (under) edgesUnder.push({ edge: `${path.dataset.source}→${path.dataset.target}`, box: id })
      }
    }
    const panel = svg.parentElement!.getBoundingClientRect()
    return {
      orientation: svg.getAttribute("data-orientation"),
      smallestText,
      texts: texts.length,
      labelsOutside,
      edgesUnder,
      edges: paths.length,
      titles: Object.fromEntries(
        nodes.map((node) => [node.dataset.node ?? "", node.querySelector("title")?.textContent ?? ""])
      ),
      labels: Object.fromEntries(
        nodes.map((
          node
        ) => [node.dataset.node ?? "", [...node.querySelectorAll(".node-label tspan")].map((t) => t.textContent ?? "")])
      ),
      width: svg.getBoundingClientRect().width,
      panelWidth: panel.width,
      panelRight: panel.right
    }
  })
