/**
 * `docs/performance.md` is reference, not a diary: it holds the current figures only, each beside
 * its floor or goal, and the stories of how they got there go in commit messages. Two checks hold
 * it so:
 *
 * - it is at most 300 lines;
 * - it has no run-by-run history: no table whose header has a cell starting with "run", "before"
 *   or "after" (the first columns of the tables that listed runs A, B, C… or a build before and
 *   after a change), and no heading naming a lettered run ("run A", "runs L–O"). A figure's
 *   provenance goes in a cell of its own row (a date, a commit), not in a column per run.
 */
import { describe, expect, it } from "@effect/vitest"
import { readFileSync } from "node:fs"
import { fileURLToPath } from "node:url"

const root = fileURLToPath(new URL("../../../", import.meta.url))

/** The most lines `docs/performance.md` may have. */
const MAX_LINES = 300

/** The number of lines of a text, as `wc -l` counts them for a file ending in a newline. */
const lineCount = (text: string) => text.split("\n").length - (text.endsWith("\n") ? 1 : 0)

/** The cells of a Markdown table row, trimmed and without emphasis. */
const cells = (row: string) =>
  row.trim().replace(/^\||\|$/g, "").split("|").map((cell) => cell.replace(/[*_`]/g, "").trim())

/** A table's delimiter row: `|---|:---:|…`. */
const isDelimiter = (line: string) => /^\s*\|?(\s*:?-{3,}:?\s*\|)+\s*:?-*:?\s*$/.test(line)

/** The lines of a Markdown text that mark it as a diary of runs, each with its line number. */
const diaryMarks = (markdown: string): ReadonlyArray<string> => {
  const lines = markdown.split("\n")
  const marks: Array<string> = []
  lines.forEach((line, i) => {
    const next = lines[i + 1]
    if (line.trimStart().startsWith("|") && next !== undefined && isDelimiter(next)) {
      if (cells(line).some((cell) => /^(run|before|after)\b/i.test(cell))) marks.push(`${i + 1}: ${line}`)
    }
    if (/^#{1,6}\s/.test(line) && /\b[Rr]uns? [A-Z](?:[–-][A-Z])?\b/.test(line)) marks.push(`${i + 1}: ${line}`)
  })
  return marks
}

const performance = readFileSync(`${root}docs/performance.md`, "utf8")

describe("docs/performance.md holds the current figures only", () => {
  it(`is at most ${MAX_LINES} lines`, () => {
    expect(lineCount(performance)).toBeLessThanOrEqual(MAX_LINES)
    expect(lineCount("a\nb\n")).toBe(2)
    expect(lineCount("a\nb")).toBe(2)
  })

  it("has no run-by-run or before/after table, and no heading naming a run", () => {
    expect(diaryMarks(performance)).toEqual([])
  })

  it("the rule finds the shapes of a diary, and leaves a table of current figures alone", () => {
    const diary = [
      "## Runs L–O",
      "",
      "| figure | run L | run M | goal |",
      "|---|---|---|---|",
      "| drain | 3.03 | 3.00 | ≥ 1.0 |",
      "",
      "| **run (load)** | SQLite | PostgreSQL |",
      "|:---|---:|---|",
      "| 6–7 | 2,718/s | 225/s |",
      "",
      "| | before | after |",
      "|---|---|---|",
      "| frames | 1.79 | 1.00 |"
    ].join("\n")
    expect(diaryMarks(diary).map((mark) => mark.split(":")[0])).toEqual(["1", "3", "7", "11"])

    const current = [
      "## Engine",
      "",
      "| figure | now | goal | from |",
      "|---|---|---|---|",
      "| engine / floor | 1.56 | ≥ 1.0 | 2026-11-27, 2babfe9 |",
      "| runs after a restart | 3 | — | — |",
      "",
      "A run I measured before the change: a sentence is not a table."
    ].join("\n")
    expect(diaryMarks(current)).toEqual([])
  })
})
