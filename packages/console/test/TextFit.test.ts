/**
 * Labels fitted to a node's width: wrapped at spaces to at most the lines allowed, a word wider
 * than a line broken, the last line cut with "…" when the rest does not fit; never wider than
 * asked (with a measure of 7 pixels a character).
 */
import { describe, expect, it } from "@effect/vitest"
import { FastCheck as fc } from "effect"
import { ellipsis, wrap } from "../src/app/diagram/TextFit.js"

const measure = (text: string) => text.length * 7

describe("wrap", () => {
  it("keeps a label that fits on one line", () => {
    expect(wrap("Zoom", 120, 2, measure)).toEqual({ lines: ["Zoom"], cut: false })
  })

  it("wraps Ken Burns's \"Image or placeholder\" at a space", () => {
    expect(wrap("Image or placeholder", 120, 2, measure)).toEqual({ lines: ["Image or", "placeholder"], cut: false })
  })

  it("cuts what does not fit in the lines allowed with an ellipsis", () => {
    const fitted = wrap("Summarise the description of the picture for its caption", 120, 2, measure)
    expect(fitted.cut).toBe(true)
    expect(fitted.lines).toHaveLength(2)
    expect(fitted.lines[0]).toBe("Summarise the")
    expect(fitted.lines[1]).toBe("description of t…")
  })

  it("breaks a word wider than a line", () => {
    expect(wrap("abcdefghijklmnopqrstuvwxyz", 70, 3, measure)).toEqual({
      lines: ["abcdefghij", "klmnopqrst", "uvwxyz"],
      cut: false
    })
  })

  it("never makes a line wider than asked, nor more lines, and loses no word unless it says it cut", () => {
    const text = fc.array(fc.stringMatching(/^[a-zA-Z]{1,14}$/), { minLength: 1, maxLength: 8 }).map((w) => w.join(" "))
    fc.assert(fc.property(text, fc.integer({ min: 1, max: 3 }), (label, lines) => {
      const fitted = wrap(label, 84, lines, measure)
      expect(fitted.lines.length).toBeLessThanOrEqual(lines)
      for (const line of fitted.lines) expect(measure(line)).toBeLessThanOrEqual(84)
      if (!fitted.cut) expect(fitted.lines.join("").replace(/\s/g, "")).toBe(label.replace(/\s/g, ""))
    }))
  })
})

describe("ellipsis", () => {
  it("cuts a node type that does not fit", () => {
    expect(ellipsis("image.placeholder", 200, measure)).toEqual({ lines: ["image.placeholder"], cut: false })
    expect(ellipsis("provider.replicate.prediction", 84, measure)).toEqual({ lines: ["provider.re…"], cut: true })
  })
})
