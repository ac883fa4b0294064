import { Execution } from "@appexec/api"
import { describe, expect, it } from "@effect/vitest"
import { Schema } from "effect"
import * as LiveDisplay from "../src/internal/LiveDisplay.js"

const status = (s: Execution.ExecutionStatus, queuePosition?: number): LiveDisplay.Event => ({
  _tag: "Status",
  execution: Schema.decodeSync(Execution.Execution)({
    executionId: "6f1c1d7e-2b1a-4c3e-9a55-1f2e3d4c5b6a",
    workflowId: "0b7a4c2e-8f3d-4e1a-a2b3-c4d5e6f70819",
    status: s,
    outputs: [],
    errorMessage: null,
    startedAt: null,
    completedAt: null,
    createdAt: "2026-11-22T10:00:00.000Z",
    ...(queuePosition === undefined ? {} : { queuePosition })
  })
})
const progress = (nodeId: string, fraction: number, message: string | null = null): LiveDisplay.Event => ({
  _tag: "Progress",
  progress: { nodeId, fraction, message }
})
const log = (nodeId: string | null, message: string, level: "info" | "warn" | "error" = "info"): LiveDisplay.Event => ({
  _tag: "Log",
  line: { at: new Date("2026-11-22T10:00:02.000Z"), level, nodeId, message }
})

/** A run: queued behind two, then one, running with two nodes reporting, a log line, a warning, done. */
const run: ReadonlyArray<readonly [LiveDisplay.Event, number]> = [
  [status("queued", 2), 0],
  [status("queued", 1), 400],
  [status("running"), 1_000],
  [progress("pause", 0.05, "waiting"), 1_100],
  [progress("pause", 0.1, "waiting"), 2_000],
  [log("fetch", "GET example.com 200 (12 ms)"), 2_100],
  [progress("pause", 0.15), 2_500],
  [progress("resize", 0.5), 2_600],
  [{ _tag: "Tick" }, 3_000],
  [progress("pause", 0.3), 4_000],
  [log(null, "12 older lines were dropped", "warn"), 4_100],
  [progress("pause", 1), 11_000],
  [status("completed"), 11_000]
]

const ESC = "\x1b"

describe("the live display of appexec run", () => {
  it("in a pipe: plain lines for statuses, log lines, and progress moving by 10% or reaching 100%; no ANSI", () => {
    const text = LiveDisplay.render({ tty: false, columns: 80 }, run)
    expect(text).not.toContain(ESC)
    expect(text.split("\n")).toEqual([
      "queued · 2 ahead · 0s",
      "queued · 1 ahead · 0s",
      "running · 1s",
      "[pause] 10% waiting",
      "[fetch] GET example.com 200 (12 ms)",
      "[resize] 50%",
      "[pause] 30%",
      "[appexec] warn: 12 older lines were dropped",
      "[pause] 100%",
      "completed · 11s",
      ""
    ])
  })

  it("in a pipe: the same status read again prints nothing", () => {
    expect(LiveDisplay.render({ tty: false, columns: 80 }, [[status("running"), 0], [status("running"), 3_000]]))
      .toBe("running · 0s\n")
  })

  it("on a terminal: the block of status and bars is redrawn in place, log lines go above it", () => {
    const mode = { tty: true, columns: 80 }
    const steps: Array<string> = []
    let state = LiveDisplay.initial
    for (const [event, elapsed] of run) {
      const [next, text] = LiveDisplay.step(mode, state, event, elapsed)
      state = next
      steps.push(text)
    }
    // First draw: nothing to erase, the status line alone.
    expect(steps[0]).toBe("queued · 2 ahead · 0s\n")
    // Each later one moves up over the lines drawn before, erases them, and draws again.
    expect(steps[1]).toBe(`${ESC}[1A\r${ESC}[Jqueued · 1 ahead · 0s\n`)
    expect(steps[4]).toBe(`${ESC}[2A\r${ESC}[Jrunning · 2s\n  pause [#.........]  10% waiting\n`)
    // A log line is printed once, above the block, which follows it.
    expect(steps[5]).toBe(
      `${ESC}[2A\r${ESC}[J[fetch] GET example.com 200 (12 ms)\nrunning · 2s\n  pause [#.........]  10% waiting\n`
    )
    // Two nodes: the ids are padded to one column.
    expect(steps[8]).toBe(
      `${ESC}[3A\r${ESC}[Jrunning · 3s\n  pause  [#.........]  15%\n  resize [#####.....]  50%\n`
    )
    expect(steps.at(-1)).toBe(
      `${ESC}[3A\r${ESC}[Jcompleted · 11s\n  pause  [##########] 100%\n  resize [#####.....]  50%\n`
    )
    // Seen as the terminal shows it, the log lines stay, and the last block.
    expect(onScreen(steps.join(""))).toEqual([
      "[fetch] GET example.com 200 (12 ms)",
      "[appexec] warn: 12 older lines were dropped",
      "completed · 11s",
      "  pause  [##########] 100%",
      "  resize [#####.....]  50%"
    ])
  })

  it("a note of the command (the execution's id) is a line of its own: in a pipe, and above the block on a terminal", () => {
    const note: LiveDisplay.Event = { _tag: "Note", text: "execution 6f1c1d7e-2b1a-4c3e-9a55-1f2e3d4c5b6a started" }
    expect(LiveDisplay.render({ tty: false, columns: 80 }, [[note, 0], [status("queued", 0), 0]])).toBe(
      "execution 6f1c1d7e-2b1a-4c3e-9a55-1f2e3d4c5b6a started\nqueued · 0 ahead · 0s\n"
    )
    const text = LiveDisplay.render({ tty: true, columns: 80 }, [[status("queued", 1), 0], [note, 0], [
      status("running"),
      1_000
    ]])
    expect(onScreen(text)).toEqual(["execution 6f1c1d7e-2b1a-4c3e-9a55-1f2e3d4c5b6a started", "running · 1s"])
  })

  it("on a terminal: lines are cut to the terminal's width, so that each takes one row", () => {
    const [, text] = LiveDisplay.step(
      { tty: true, columns: 20 },
      LiveDisplay.initial,
      progress("a-very-long-node-id", 0.5, "halfway there"),
      0
    )
    expect(text.split("\n")).toEqual(["starting · 0s", "  a-very-long-node-", ""])
  })
})

/** The rows a terminal shows after `text`: applies `ESC[nA` (up), `\r`, `ESC[J` (erase below) and newlines. */
const onScreen = (text: string): ReadonlyArray<string> => {
  const rows: Array<string> = [""]
  let row = 0
  const tokens = new RegExp(`${ESC}\\[\\d*[AJ]|\\r|\\n|[^${ESC}\\r\\n]+`, "g")
  for (const token of text.match(tokens) ?? []) {
    if (token === "\n") {
      row++
      if (rows.length <= row) rows.push("")
    } else if (token === "\r") continue
    else if (token.endsWith("A")) row -= Number(token.slice(2, -1))
    else if (token.endsWith("J")) rows.splice(row, rows.length - row, "")
    else rows[row] = (rows[row] ?? "") + token
  }
  while (rows.at(-1) === "") rows.pop()
  return rows
}
