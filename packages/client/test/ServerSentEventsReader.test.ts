/**
 * The reader of `text/event-stream` that holds its state (`makeReader`, used by the console and
 * the benchmarks): fields, comments, multi-line data, the last event id, every kind of line end;
 * any cut of the text into chunks gives the same events.
 */
import { describe, expect, it } from "@effect/vitest"
import { FastCheck as fc } from "effect"
import { makeReader, type Message } from "../src/ServerSentEvents.js"

const read = (chunks: ReadonlyArray<string>): Array<Message> => {
  const reader = makeReader()
  return chunks.flatMap((chunk) => [...reader.push(chunk)])
}

const stream = [
  ": a comment",
  "id: 1001",
  "event: execution",
  "data: {\"status\":\"running\"}",
  "",
  ": keep-alive",
  "",
  "id: 1002",
  "event: log",
  "data: first",
  "data: second",
  "",
  "event: progress",
  "data:{\"fraction\":0.5}",
  "",
  "data",
  "",
  "event: dropped",
  ""
]

const expected: Array<Message> = [
  { event: "execution", data: "{\"status\":\"running\"}", lastEventId: "1001" },
  { event: "log", data: "first\nsecond", lastEventId: "1002" },
  { event: "progress", data: "{\"fraction\":0.5}", lastEventId: "1002" },
  { event: "message", data: "", lastEventId: "1002" }
]

describe("the event stream reader", () => {
  it("reads events, comments, multi-line data and the last event id", () => {
    expect(read([stream.join("\n")])).toEqual(expected)
  })

  it("reads CRLF, LF and CR line ends alike, a CRLF split between chunks as one", () => {
    expect(read([stream.join("\r\n")])).toEqual(expected)
    expect(read([stream.join("\r")])).toEqual(expected)
    expect(read(["id: 7\r", "\ndata: x\r", "\n\r", "\n"])).toEqual([{ event: "message", data: "x", lastEventId: "7" }])
    const reader = makeReader()
    reader.push("id: 9\nid: bad\u0000id\n")
    expect(reader.lastEventId()).toBe("9")
  })

  it("gives the same events however the text is cut into chunks", () => {
    const text = stream.join("\r\n")
    fc.assert(
      fc.property(fc.uniqueArray(fc.integer({ min: 1, max: text.length - 1 }), { maxLength: 12 }), (cuts) => {
        const points = [0, ...cuts.sort((a, b) => a - b), text.length]
        const chunks = points.slice(1).map((end, i) => text.slice(points[i], end))
        expect(read(chunks)).toEqual(expected)
      })
    )
  })
})
