/**
 * Server-sent events readers for the tests: one request on a connection of its own (Node's
 * `http`, so that closing it is the client going away), its status and headers, and what it
 * receives, frame by frame, as it comes; and the frames of a web `ReadableStream` body.
 */
import { Effect, Option, Queue } from "effect"
import { type IncomingHttpHeaders, type IncomingMessage, request as httpRequest } from "node:http"

/** One frame of the stream: an event, or a comment (the heartbeat). */
export type Frame =
  | { readonly _tag: "Event"; readonly id: string; readonly event: string; readonly data: string }
  | { readonly _tag: "Comment"; readonly text: string }

/** An open stream. */
export interface Opened {
  readonly status: number
  readonly headers: IncomingHttpHeaders
  /** The next frame; none once the server ended the answer. */
  readonly next: Effect.Effect<Option.Option<Frame>>
  /** Whether the server ended the answer (all frames taken or not). */
  readonly ended: Effect.Effect<boolean>
  /** What came of the body so far, as sent. */
  readonly raw: Effect.Effect<string>
  /** The whole body, once the answer ended (an error's JSON). */
  readonly text: Effect.Effect<string>
  /** Goes away: the connection is destroyed. */
  readonly close: Effect.Effect<void>
}

/** The frame a block of lines (between blank lines) is. */
export const parse = (block: string): Frame => {
  const lines = block.split("\n")
  if (lines.every((line) => line.startsWith(":"))) {
    return { _tag: "Comment", text: lines.map((line) => line.slice(1).trim()).join("\n") }
  }
  const fields: Record<string, Array<string>> = {}
  for (const line of lines) {
    const colon = line.indexOf(":")
    const name = line.slice(0, colon)
    ;(fields[name] ??= []).push(line.slice(colon + 1).replace(/^ /, ""))
  }
  return {
    _tag: "Event",
    id: fields["id"]?.[0] ?? "",
    event: fields["event"]?.[0] ?? "message",
    data: (fields["data"] ?? []).join("\n")
  }
}

/** `GET path` on `baseUrl` with `headers`; answers once the status and headers came. */
export const open = (baseUrl: string, path: string, headers: Record<string, string> = {}) =>
  Effect.gen(function*() {
    const frames = yield* Queue.unbounded<Option.Option<Frame>>()
    let buffered = ""
    let whole = ""
    let ended = false
    const url = new URL(path, baseUrl)
    const req = httpRequest({ host: url.hostname, port: url.port, path: `${url.pathname}${url.search}`, headers })
    const res = yield* Effect.async<IncomingMessage>((resume) => {
      req.on("response", (res) => resume(Effect.succeed(res)))
      req.on("error", (error) => resume(Effect.die(error)))
      req.end()
    })
    res.setEncoding("utf8")
    res.on("data", (chunk: string) => {
      whole += chunk
      buffered += chunk
      for (let end = buffered.indexOf("\n\n"); end !== -1; end = buffered.indexOf("\n\n")) {
        Queue.unsafeOffer(frames, Option.some(parse(buffered.slice(0, end))))
        buffered = buffered.slice(end + 2)
      }
    })
    const onEnd = () => {
      if (ended) return
      ended = true
      Queue.unsafeOffer(frames, Option.none())
    }
    res.on("end", onEnd)
    res.on("close", onEnd)
    res.on("error", () => {})
    return {
      status: res.statusCode ?? 0,
      headers: res.headers,
      next: Effect.flatMap(Queue.take(frames), (frame): Effect.Effect<Option.Option<Frame>> =>
        // The end stays the end for every later take.
        Option.isNone(frame) ? Effect.as(Queue.offer(frames, frame), frame) : Effect.succeed(frame)),
      ended: Effect.sync(() => ended),
      raw: Effect.sync(() => whole),
      text: Effect.async<string>((resume) => {
        if (res.readableEnded) return resume(Effect.succeed(whole))
        res.once("end", () => resume(Effect.succeed(whole)))
      }),
      close: Effect.sync(() => void req.destroy())
    } satisfies Opened
  })

/** Every frame until the end, the heartbeat comments left out. */
export const eventsUntilEnd = (opened: Opened) =>
  Effect.gen(function*() {
    const events: Array<Extract<Frame, { _tag: "Event" }>> = []
    for (;;) {
      const frame = yield* opened.next
      if (Option.isNone(frame)) return events
      if (frame.value._tag === "Event") events.push(frame.value)
    }
  })

/** The frames of a web body, one `next` at a time; none once it is done. */
export const webFrames = (body: ReadableStream<Uint8Array>) => {
  const reader = body.getReader()
  const decoder = new TextDecoder()
  let buffered = ""
  const next: Effect.Effect<Option.Option<Frame>> = Effect.suspend(() => {
    const end = buffered.indexOf("\n\n")
    if (end !== -1) {
      const block = buffered.slice(0, end)
      buffered = buffered.slice(end + 2)
      return Effect.succeed(Option.some(parse(block)))
    }
    return Effect.flatMap(Effect.promise(() => reader.read()), (read) => {
      if (read.done) return Effect.succeed(Option.none())
      buffered += decoder.decode(read.value, { stream: true })
      return next
    })
  })
  return { next, cancel: Effect.promise(() => reader.cancel()) }
}
