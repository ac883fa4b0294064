/**
 * A reader of `text/event-stream` text (WHATWG HTML, server-sent events): lines end with CRLF,
 * LF or CR, a CRLF split between two chunks being one end; `:` lines are comments; `data:` lines
 * join with LF; `id:` sets the last event id (a value with NUL is ignored); an empty line
 * dispatches the event when it has data. The console reads the stream with `fetch`, as
 * `EventSource` cannot send the key.
 */

/** One dispatched event. */
export interface Message {
  /** The `event` field, `message` when none was given. */
  readonly event: string
  readonly data: string
  /** The last event id of the stream at this event; "" when none was set. */
  readonly id: string
}

/** A reader: `push` the decoded text as it comes, get the events it completes. */
export interface Reader {
  readonly push: (text: string) => ReadonlyArray<Message>
  /** The last event id so far, to resume after (`Last-Event-ID`). */
  readonly lastEventId: () => string
}

/** A reader at the start of a stream. */
export const makeReader = (): Reader => {
  let pending = ""
  let afterCR = false
  let event = ""
  let data: Array<string> | null = null
  let lastId = ""

  const line = (text: string): Message | undefined => {
    if (text === "") {
      const message = data === null
        ? undefined
        : { event: event === "" ? "message" : event, data: data.join("\n"), id: lastId }
      event = ""
      data = null
      return message
    }
    if (text.startsWith(":")) return undefined
    const colon = text.indexOf(":")
    const field = colon === -1 ? text : text.slice(0, colon)
    const raw = colon === -1 ? "" : text.slice(colon + 1)
    const value = raw.startsWith(" ") ? raw.slice(1) : raw
    if (field === "event") event = value
    else if (field === "data") (data ??= []).push(value)
    else if (field === "id" && !value.includes("\u0000")) lastId = value
    return undefined
  }

  return {
    push: (chunk) => {
      let text = chunk
      if (afterCR && text.startsWith("\n")) text = text.slice(1)
      if (text.length > 0) afterCR = false
      const buffered = pending + text
      const messages: Array<Message> = []
      let from = 0
      for (const match of buffered.matchAll(/\r\n|\r|\n/g)) {
        const at = match.index ?? 0
        if (match[0] === "\r" && at === buffered.length - 1) afterCR = true
        const message = line(buffered.slice(from, at))
        if (message !== undefined) messages.push(message)
        from = at + match[0].length
      }
      pending = buffered.slice(from)
      return messages
    },
    lastEventId: () => lastId
  }
}
