/**
 * Text fitted to a width, for labels drawn in SVG (which does not wrap): broken into lines at
 * spaces (a word wider than a line is broken where it must), at most a given number of lines, the
 * last one cut with "…" when the rest does not fit. Widths come from a `Measure`, in the browser
 * the canvas's `measureText` in the label's own font (`canvasMeasure`).
 */

/** The width of `text` in CSS pixels, as drawn. */
export type Measure = (text: string) => number

/** The lines of a fitted text, and whether it was cut (the whole is then shown on hover). */
export interface Fitted {
  readonly lines: ReadonlyArray<string>
  readonly cut: boolean
}

/** The longest start of `text` (one character at least) whose width with `suffix` is at most `width`. */
const longestStart = (text: string, suffix: string, width: number, measure: Measure) => {
  let low = 1
  let high = text.length
  while (low < high) {
    const middle = Math.ceil((low + high) / 2)
    if (measure(`${text.slice(0, middle).trimEnd()}${suffix}`) <= width) low = middle
    else high = middle - 1
  }
  return low
}

/** `text` cut with "…" to fit `width`, or whole when it fits. */
export const ellipsis = (text: string, width: number, measure: Measure): Fitted => {
  if (measure(text) <= width) return { lines: [text], cut: false }
  return { lines: [`${text.slice(0, longestStart(text, "…", width, measure)).trimEnd()}…`], cut: true }
}

/** `text` in at most `maxLines` lines of at most `width`. */
export const wrap = (text: string, width: number, maxLines: number, measure: Measure): Fitted => {
  const words = text.trim().split(/\s+/).filter((word) => word !== "")
  const lines: Array<string> = []
  let current = ""
  let i = 0
  while (i < words.length) {
    if (lines.length === maxLines - 1) {
      const last = ellipsis([current, ...words.slice(i)].filter((w) => w !== "").join(" "), width, measure)
      return { lines: [...lines, ...last.lines], cut: last.cut }
    }
    const word = words[i]!
    const candidate = current === "" ? word : `${current} ${word}`
    if (measure(candidate) <= width) {
      current = candidate
      i++
    } else if (current !== "") {
      lines.push(current)
      current = ""
    } else {
      // A word wider than a line: as much of it as fits, the rest on the next line.
      const fits = longestStart(word, "", width, measure)
      lines.push(word.slice(0, fits))
      words[i] = word.slice(fits)
    }
  }
  if (current !== "") lines.push(current)
  return { lines: lines.length === 0 ? [""] : lines, cut: false }
}

/**
 * A `Measure` for `font` (a CSS `font` shorthand) in the browser, from a canvas; where there is
 * none, an estimate that errs wide (0.62 em a character).
 */
export const canvasMeasure = (font: string, size: number): Measure => {
  const context = typeof document === "undefined" ? null : document.createElement("canvas").getContext("2d")
  if (context === null) return (text) => text.length * size * 0.62
  context.font = font
  return (text) => context.measureText(text).width
}
