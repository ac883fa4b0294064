import { describe, expect, it } from "@effect/vitest"
import { FastCheck as fc } from "effect"
import * as ServerSentEvents from "../src/ServerSentEvents.js"

/** Feeds `chunks` one after the other; returns every event and the state after the last. */
const parse = (...chunks: ReadonlyArray<string>) => {
  let state = ServerSentEvents.initial
  const events: Array<ServerSentEvents.Message> = []
  for (const chunk of chunks) {
    const [next, messages] = ServerSentEvents.feed(state, chunk)
    state = next
    events.push(...messages)
  }
  return { events, state }
}

describe("the text/event-stream parser", () => {
  it("reads events ended by LF, CRLF or CR, with their name, data and id", () => {
    for (const eol of ["\n", "\r\n", "\r"]) {
      const text = ["event: execution", "id: 1", "data: {\"a\":1}", "", "event: log", "id: 2", "data: x", "", ""]
        .join(eol)
      expect(parse(text).events).toEqual([
        { event: "execution", data: "{\"a\":1}", lastEventId: "1" },
        { event: "log", data: "x", lastEventId: "2" }
      ])
    }
  })

  it("joins data lines with LF and names an event without `event` `message`", () => {
    expect(parse("data: one\ndata:two\ndata\ndata:  three\n\n").events).toEqual([
      { event: "message", data: "one\ntwo\n\n three", lastEventId: "" }
    ])
  })

  it("skips comments and unknown fields, and dispatches nothing for an event without data", () => {
    const { events } = parse(": keep-alive\n\nfoo: bar\nevent: progress\n\n:x\ndata: y\n\n")
    // The `event` of the block without data is forgotten at its empty line.
    expect(events).toEqual([{ event: "message", data: "y", lastEventId: "" }])
  })

  it("keeps the last id for later events, ignores an id with NUL, and an empty id clears it", () => {
    const { events } = parse("id: 7\ndata: a\n\ndata: b\n\nid: 8\u0000\ndata: c\n\nid\ndata: d\n\n")
    expect(events.map((e) => [e.data, e.lastEventId])).toEqual([["a", "7"], ["b", "7"], ["c", "7"], ["d", ""]])
  })

  it("takes `retry` only when it is all ASCII digits", () => {
    expect(parse("retry: 2500\n\n").state.retryMs).toBe(2500)
    expect(parse("retry: 2500\nretry: 1e3\nretry: -1\nretry: 10 \n").state.retryMs).toBe(2500)
  })

  it("drops one leading byte order mark, and only at the start", () => {
    expect(parse("\uFEFFdata: a\n\n").events).toEqual([{ event: "message", data: "a", lastEventId: "" }])
    expect(parse("", "\uFEFFdata: a\n\n").events).toEqual([{ event: "message", data: "a", lastEventId: "" }])
    // A second one is part of the field name, which is then no field this parser knows.
    expect(parse("\uFEFF\uFEFFdata: a\n\n").events).toEqual([])
  })

  it("reads a CRLF split between two chunks as one line end", () => {
    const { events } = parse("data: a\r", "\ndata: b\r", "\n\r", "\n")
    expect(events).toEqual([{ event: "message", data: "a\nb", lastEventId: "" }])
  })

  it("drops an event the stream ends in the middle of", () => {
    const { events, state } = parse("data: a\n\ndata: b\n")
    expect(events.map((e) => e.data)).toEqual(["a"])
    expect(state.data).toBe("b\n")
  })

  it("gives the same events however the text is cut into chunks", () => {
    const line = fc.oneof(
      fc.constantFrom("", ": keep-alive", "event: log", "event: progress", "data", "retry: 100", "id: 3"),
      fc.string({ maxLength: 8 }).map((s) => `data: ${s.replace(/[\r\n]/g, "")}`),
      fc.nat({ max: 99 }).map((n) => `id: ${n}`)
    )
    const stream = fc.tuple(fc.array(line, { maxLength: 30 }), fc.constantFrom("\n", "\r\n", "\r"))
      .map(([lines, eol]) => lines.map((l) => l + eol).join(""))
    fc.assert(
      fc.property(stream, fc.array(fc.nat(), { maxLength: 10 }), (text, cuts) => {
        const at = [...new Set(cuts.map((c) => c % (text.length + 1)))].sort((a, b) => a - b)
        const chunks = [0, ...at].map((from, i) => text.slice(from, [...at, text.length][i]))
        expect(parse(...chunks).events).toEqual(parse(text).events)
      })
    )
  })
})
