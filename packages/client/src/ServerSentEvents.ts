/**
 * A parser of the `text/event-stream` format, written to its specification (WHATWG HTML,
 * "Server-sent events", §9.2.6 Interpreting an event stream) as a pure step over decoded text:
 * lines end with CRLF, LF or CR (a CRLF split between two chunks is one line end); a leading BOM
 * is dropped; lines starting with `:` are comments; `data:` lines join with LF; `id:` sets the
 * last event id, which every later event carries until another `id:` changes it (a value with
 * NUL is ignored); `retry:` with ASCII digits only sets the reconnection time; other fields are
 * ignored; an empty line dispatches the event, unless its data is empty; an event the stream ends
 * in the middle of is dropped.
 *
 * Effect-free and runtime-neutral (`@appexec/client/ServerSentEvents`): the client's event streams,
 * the console and the benchmarks all read streams with it. `feed` is the pure step; `makeReader`
 * holds the state for a caller that reads chunk by chunk.
 */

/** One dispatched event. */
export interface Message {
  /** The `event` field, `message` when none was given. */
  readonly event: string
  /** The `data` lines, joined with LF. */
  readonly data: string
  /** The last event id of the stream when this event was dispatched; "" when none was set. */
  readonly lastEventId: string
}

/** Where the parser is between two chunks. */
export interface State {
  /** The start of a line whose end has not come yet. */
  readonly pending: string
  /** The last chunk ended with CR: an LF at the start of the next one ends no second line. */
  readonly afterCR: boolean
  /** No character has been read yet (a BOM is dropped only there). */
  readonly atStart: boolean
  readonly eventType: string
  /** The data lines of the event being read, each with its LF, or null when there are none. */
  readonly data: string | null
  readonly lastEventId: string
  /** The reconnection time a `retry:` field set, in milliseconds. */
  readonly retryMs: number | undefined
}

/** The state before the first chunk. */
export const initial: State = {
  pending: "",
  afterCR: false,
  atStart: true,
  eventType: "",
  data: null,
  lastEventId: "",
  retryMs: undefined
}

/** Applies one complete line to the event being read; returns the event when the line dispatches it. */
const applyLine = (state: State, line: string): readonly [State, Message | undefined] => {
  if (line === "") {
    const dispatched = state.data === null
      ? undefined
      : {
        event: state.eventType === "" ? "message" : state.eventType,
        data: state.data.slice(0, -1),
        lastEventId: state.lastEventId
      }
    return [{ ...state, eventType: "", data: null }, dispatched]
  }
  if (line.startsWith(":")) return [state, undefined]
  const colon = line.indexOf(":")
  const field = colon === -1 ? line : line.slice(0, colon)
  const raw = colon === -1 ? "" : line.slice(colon + 1)
  const value = raw.startsWith(" ") ? raw.slice(1) : raw
  switch (field) {
    case "event":
      return [{ ...state, eventType: value }, undefined]
    case "data":
      return [{ ...state, data: `${state.data ?? ""}${value}\n` }, undefined]
    case "id":
      return [value.includes("\u0000") ? state : { ...state, lastEventId: value }, undefined]
    case "retry":
      return [/^[0-9]+$/.test(value) ? { ...state, retryMs: Number(value) } : state, undefined]
    default:
      return [state, undefined]
  }
}

/** Reads the next chunk of text: the state after it, and the events it completed, in order. */
export const feed = (state: State, chunk: string): readonly [State, ReadonlyArray<Message>] => {
  let text = chunk
  if (state.atStart && text.length > 0) {
    if (text.startsWith("\uFEFF")) text = text.slice(1)
    state = { ...state, atStart: false }
  }
  if (state.afterCR && text.length > 0) {
    if (text.startsWith("\n")) text = text.slice(1)
    state = { ...state, afterCR: false }
  }
  const messages: Array<Message> = []
  const buffered = state.pending + text
  let from = 0
  for (const match of buffered.matchAll(/\r\n|\r|\n/g)) {
    // A CR at the very end may be the first half of a CRLF that the next chunk completes.
    if (match[0] === "\r" && match.index === buffered.length - 1) state = { ...state, afterCR: true }
    const [next, message] = applyLine(state, buffered.slice(from, match.index))
    state = next
    if (message !== undefined) messages.push(message)
    from = match.index + match[0].length
  }
  return [{ ...state, pending: buffered.slice(from) }, messages]
}

/** A reader that holds its state: `push` the decoded text as it comes, get the events it completes. */
export interface Reader {
  /** Reads the next chunk of text; answers the events it completed, in order. */
  readonly push: (chunk: string) => ReadonlyArray<Message>
  /** The last event id so far ("" when none was set), to resume after (`Last-Event-ID`). */
  readonly lastEventId: () => string
}

/** A reader at the start of a stream (`feed` over a state of its own). */
export const makeReader = (): Reader => {
  let state = initial
  return {
    push: (chunk) => {
      const [next, messages] = feed(state, chunk)
      state = next
      return messages
    },
    lastEventId: () => state.lastEventId
  }
}
