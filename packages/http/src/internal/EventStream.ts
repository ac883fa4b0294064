/**
 * The wire of an execution's event stream (docs/api.md#live-executions): each event framed as
 * the HTML standard's server-sent events (`id`, `event`, `data`), a comment heartbeat while
 * nothing else is sent, the `reconnect` event that ends a stream when the app stops, and the body
 * that carries them (`Exchange.StreamedBody`), which ends quietly (logged) when the events fail
 * rather than after the headers went out as a 200.
 */
import { Live } from "@appexec/api"
import type { Appexec, Errors } from "@appexec/core"
import { concat } from "@appexec/core/Bytes"
import { Cause, Duration, Effect } from "effect"
import type { StreamedBody } from "./Exchange.js"
import type * as Heartbeats from "./Heartbeats.js"

const encoder = new TextEncoder()

/** The headers of the stream's 200: no cache, and no buffering by a proxy (nginx reads `X-Accel-Buffering`). */
export const headers: Readonly<Record<string, string>> = {
  "content-type": "text/event-stream",
  "cache-control": "no-cache",
  "x-accel-buffering": "no"
}

/**
 * One event as SSE: its `id`, its `event` name, and its data, one `data:` line per line of it (a
 * reader joins them with newlines), then the blank line that ends the event.
 */
export const frame = (event: Appexec.LiveEvent): Uint8Array => {
  let text = `id: ${event.id}\nevent: ${event.event}\n`
  for (const line of event.data.split(/\r\n|\r|\n/)) text += `data: ${line}\n`
  return encoder.encode(`${text}\n`)
}

/**
 * `frame` made once per event: the streams of one execution get the same event objects (core
 * shares each read among them), so 2,000 streams frame each event once. Kept while the event is.
 */
export const makeFramer = (): (event: Appexec.LiveEvent) => Uint8Array => {
  const framed = new WeakMap<Appexec.LiveEvent, Uint8Array>()
  return (event) => {
    let bytes = framed.get(event)
    if (bytes === undefined) framed.set(event, bytes = frame(event))
    return bytes
  }
}

/** The comment a reader ignores, sent to keep the connection (and the proxies on its way) open. */
export const heartbeat: Uint8Array = encoder.encode(": keep-alive\n\n")

/**
 * The last event of a stream whose app stops (`Live.RECONNECT_EVENT`): no `id`, so that a client
 * resumes after the last event it received, and a `retry:` that asks it to come back soon —
 * through the balancer, to a server that is not stopping.
 */
export const reconnect: Uint8Array = encoder.encode(
  `event: ${Live.RECONNECT_EVENT}\nretry: ${Live.RECONNECT_RETRY_MS}\ndata: ${
    JSON.stringify({ reason: "the server is stopping; reconnect with Last-Event-ID" })
  }\n\n`
)

/** Seconds without an event after which `heartbeat` is sent. */
export const heartbeatEvery = Duration.seconds(Live.HEARTBEAT_SECONDS)

/**
 * The body of one event stream: what `follower` reads, framed, written as it comes, with a
 * heartbeat after `heartbeatEvery` with nothing sent, until the stream ends, fails (logged with
 * the request id; the answer just ends) or the app stops (the `reconnect` event, then the end:
 * `Heartbeats.stop`). One fiber per stream, the adapter's:
 * while idle it waits on the follower's change and the app's heartbeats at once, with no fiber,
 * timer or queue of its own. `release` gives the stream's place back and closes the follower.
 */
export const body = (
  follower: Appexec.Follower,
  options: {
    readonly release: Effect.Effect<void>
    readonly heartbeats: Heartbeats.Heartbeats
    readonly requestId: string
    /** How an event is framed (`frame`, or a `makeFramer` shared by the app's streams). */
    readonly frame?: ((event: Appexec.LiveEvent) => Uint8Array) | undefined
  }
): StreamedBody => ({
  _tag: "StreamedBody",
  run: (write) => {
    /** What woke an idle stream. */
    const idle = Effect.async<"change" | Heartbeats.Reason>((resume) => {
      let woken = false
      let cancelChange = () => {}
      let cancelBeat = () => {}
      // The first to come wakes the stream and withdraws the other.
      const wake = (reason: "change" | Heartbeats.Reason) => {
        if (woken) return
        woken = true
        cancelChange()
        cancelBeat()
        resume(Effect.succeed(reason))
      }
      cancelChange = follower.onChange(() => wake("change"))
      if (!woken) cancelBeat = options.heartbeats.after(wake)
      return Effect.sync(() => {
        cancelChange()
        cancelBeat()
      })
    })
    const framed = options.frame ?? frame
    const send = (events: ReadonlyArray<Appexec.LiveEvent>) =>
      events.length === 0 ? Effect.void : write(events.length === 1 ? framed(events[0]!) : concat(events.map(framed)))
    const read: Effect.Effect<void, Errors.StorageError> = Effect.flatMap(
      follower.next,
      ({ ended, events }) => ended ? send(events) : Effect.zipRight(send(events), wait)
    )
    const wait: Effect.Effect<void, Errors.StorageError> = Effect.flatMap(
      idle,
      (reason) =>
        reason === "change" ? read : reason === "beat" ? Effect.zipRight(write(heartbeat), wait) : write(reconnect)
    )
    return read.pipe(
      Effect.catchAllCause((cause) =>
        Cause.isInterruptedOnly(cause)
          ? Effect.interrupt
          : Effect.logError("event stream ended by a failure", cause).pipe(
            Effect.annotateLogs("requestId", options.requestId)
          )
      )
    )
  },
  release: options.release
})
