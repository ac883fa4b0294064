/**
 * What `appexec run` shows while it waits, as a pure function from what it hears (statuses, the
 * nodes' progress and log lines) to the text it writes on stderr. On a terminal: a block redrawn
 * in place (ANSI cursor moves, no colour) of a status line (`running · 12s`, `queued · 2 ahead ·
 * 3s`) and one line per node with a bar (`pause [#####.....]  50% message`), with the log lines
 * printed above it as they come. Elsewhere (a pipe, a file): plain lines, no ANSI code — one per
 * status change, one per log line, one per progress change of at least 10% of a node (and its
 * 100%).
 */
import type { Execution, Live } from "@appexec/api"

/** Whole seconds as `42s` or `3m07s`. */
export const formatElapsed = (ms: number): string => {
  const seconds = Math.max(0, Math.floor(ms / 1000))
  return seconds < 60 ? `${seconds}s` : `${Math.floor(seconds / 60)}m${String(seconds % 60).padStart(2, "0")}s`
}

/** Where the display goes: a terminal `columns` wide, or not a terminal. */
export interface Mode {
  readonly tty: boolean
  readonly columns: number
}

/**
 * What the display is told. `Tick` redraws (the elapsed time moves on a terminal); `Note` is a
 * line of the command's own, printed above the block as log lines are.
 */
export type Event =
  | { readonly _tag: "Status"; readonly execution: Execution.Execution }
  | { readonly _tag: "Progress"; readonly progress: Live.Progress }
  | { readonly _tag: "Log"; readonly line: Live.LogLine }
  | { readonly _tag: "Note"; readonly text: string }
  | { readonly _tag: "Tick" }

/** What the display knows. */
export interface State {
  readonly status: Execution.ExecutionStatus | "starting"
  readonly queuePosition: number | undefined
  /** The latest progress of each node, in the order the nodes first reported. */
  readonly nodes: ReadonlyArray<Live.Progress>
  /** Not a terminal: the fraction last printed of each node. */
  readonly printed: Readonly<Record<string, number>>
  /** On a terminal: the lines of the block on the screen now, under the cursor's line. */
  readonly drawn: number
}

/** Before anything is heard. */
export const initial: State = { status: "starting", queuePosition: undefined, nodes: [], printed: {}, drawn: 0 }

/** Cells of a progress bar. */
const BAR = 10

/** Progress printed in a pipe moves by at least this much (a tenth, with room for float error). */
const PRINT_STEP = 0.1 - 1e-9

/** `50% message` (whole percents, rounded down: 100% only when done). */
const percentText = (progress: Live.Progress, pad: number): string => {
  const percent = `${Math.floor(progress.fraction * 100)}%`.padStart(pad)
  return progress.message === null || progress.message === "" ? percent : `${percent} ${progress.message}`
}

/** `[#####.....]  50% message`. */
export const bar = (progress: Live.Progress): string => {
  const filled = Math.min(BAR, Math.floor(progress.fraction * BAR))
  return `[${"#".repeat(filled)}${".".repeat(BAR - filled)}] ${percentText(progress, 4)}`
}

/** `[fetch] message`, or `[fetch] warn: message`; appexec's own lines are `[appexec]`. */
export const logText = (line: Live.LogLine): string =>
  `[${line.nodeId ?? "appexec"}] ${line.level === "info" ? "" : `${line.level}: `}${line.message}`

/** `running · 12s`, `queued · 2 ahead · 3s`. */
export const statusText = (state: State, elapsedMs: number): string => {
  const ahead = state.status === "queued" && state.queuePosition !== undefined
    ? ` · ${state.queuePosition} ahead`
    : ""
  return `${state.status}${ahead} · ${formatElapsed(elapsedMs)}`
}

const fit = (line: string, columns: number) => (line.length < columns ? line : line.slice(0, Math.max(1, columns - 1)))

/** The block of a terminal: the status line, then a bar per node. */
const block = (state: State, elapsedMs: number, columns: number): ReadonlyArray<string> => {
  const width = Math.max(0, ...state.nodes.map((p) => p.nodeId.length))
  return [
    statusText(state, elapsedMs),
    ...state.nodes.map((p) => `  ${p.nodeId.padEnd(width)} ${bar(p)}`)
  ].map((line) => fit(line, columns))
}

/** The state after `event`, and the text it prints in a pipe. */
const plainStep = (state: State, event: Event, elapsedMs: number): readonly [State, ReadonlyArray<string>] => {
  switch (event._tag) {
    case "Status": {
      const next = { ...state, status: event.execution.status, queuePosition: event.execution.queuePosition }
      const changed = next.status !== state.status || next.queuePosition !== state.queuePosition
      return [next, changed ? [statusText(next, elapsedMs)] : []]
    }
    case "Progress": {
      const { nodeId, fraction } = event.progress
      const last = state.printed[nodeId] ?? 0
      const next = withProgress(state, event.progress)
      const print = fraction - last >= PRINT_STEP || (fraction === 1 && last < 1)
      return print
        ? [{ ...next, printed: { ...state.printed, [nodeId]: fraction } }, [
          `[${nodeId}] ${percentText(event.progress, 0)}`
        ]]
        : [next, []]
    }
    case "Log":
      return [state, [logText(event.line)]]
    case "Note":
      return [state, [event.text]]
    case "Tick":
      return [state, []]
  }
}

const withProgress = (state: State, progress: Live.Progress): State => {
  const known = state.nodes.some((p) => p.nodeId === progress.nodeId)
  return {
    ...state,
    nodes: known
      ? state.nodes.map((p) => (p.nodeId === progress.nodeId ? progress : p))
      : [...state.nodes, progress]
  }
}

/**
 * The state after `event`, `elapsedMs` after the command started, and the text to write for it
 * (whole lines; on a terminal with the cursor moves that redraw the block).
 */
export const step = (mode: Mode, state: State, event: Event, elapsedMs: number): readonly [State, string] => {
  if (!mode.tty) {
    const [next, lines] = plainStep(state, event, elapsedMs)
    return [next, lines.map((line) => `${line}\n`).join("")]
  }
  const next = event._tag === "Status"
    ? { ...state, status: event.execution.status, queuePosition: event.execution.queuePosition }
    : event._tag === "Progress"
    ? withProgress(state, event.progress)
    : state
  const above = event._tag === "Log" ? [logText(event.line)] : event._tag === "Note" ? [event.text] : []
  const lines = block(next, elapsedMs, mode.columns)
  // Up to the block's first line, erase to the end of the screen, then the new lines and the block again.
  const erase = state.drawn > 0 ? `\x1b[${state.drawn}A\r\x1b[J` : ""
  return [{ ...next, drawn: lines.length }, `${erase}${[...above, ...lines].map((line) => `${line}\n`).join("")}`]
}

/** Everything `events` (each with its elapsed time) print, one after the other, from the start. */
export const render = (mode: Mode, events: ReadonlyArray<readonly [Event, number]>): string => {
  let state = initial
  let text = ""
  for (const [event, elapsedMs] of events) {
    const [next, written] = step(mode, state, event, elapsedMs)
    state = next
    text += written
  }
  return text
}
