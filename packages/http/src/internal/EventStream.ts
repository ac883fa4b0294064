/**
 * The wire of an execution's event stream (docs/api.md#live-executions): each event framed as
 * the HTML standard's server-sent events (`id`, `event`, `data`), a comment heartbeat while
 * nothing else is sent, and the body that carries them (`Exchange.StreamedBody`), which ends
 * quietly (logged) when the events fail rather than after the headers went out as a 200.
 */
import { Live } from "@appexec/api"
import type { Appexec, Errors } from "@appexec/core"
import { Cause, type Deferred, Duration, Effect, identity, Queue, Stream, Take } from "effect"
import type { StreamedBody } from "./Exchange.js"

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

/** The comment a reader ignores, sent to keep the connection (and the proxies on its way) open. */
export const heartbeat: Uint8Array = encoder.encode(": keep-alive\n\n")

/** Seconds without an event after which `heartbeat` is sent. */
export const heartbeatEvery = Duration.seconds(Live.HEARTBEAT_SECONDS)

/**
 * `chunks` with `beat` sent whenever `every` passes without anything sent: the time counts again
 * from each chunk and each beat. `chunks` runs ahead into a small queue, so a beat never
 * interrupts a pull of it.
 */
export const withHeartbeat = <A, E, R>(
  chunks: Stream.Stream<A, E, R>,
  beat: A,
  every: Duration.DurationInput
): Stream.Stream<A, E, R> =>
  Stream.unwrapScoped(
    Effect.map(Stream.toQueue(chunks, { capacity: 16 }), (queue) =>
      Stream.repeatEffect(
        Effect.timeoutTo(Queue.take(queue), { duration: every, onSuccess: identity, onTimeout: () => Take.of(beat) })
      ).pipe(Stream.flattenTake))
  )

/**
 * The body of one event stream: `events` framed, with the heartbeat, until they end, fail (logged
 * with the request id; the answer just ends) or `stopped` completes (the app is stopping).
 * `release` gives the stream's place back (see `Exchange.StreamedBody`).
 */
export const body = (
  events: Stream.Stream<Appexec.LiveEvent, Errors.StorageError>,
  options: {
    readonly release: Effect.Effect<void>
    readonly stopped: Deferred.Deferred<void>
    readonly requestId: string
  }
): StreamedBody => ({
  _tag: "StreamedBody",
  chunks: withHeartbeat(Stream.map(events, frame), heartbeat, heartbeatEvery).pipe(
    Stream.catchAllCause((cause) =>
      Cause.isInterruptedOnly(cause)
        ? Stream.empty
        : Stream.drain(
          Stream.fromEffect(
            Effect.logError("event stream ended by a failure", cause).pipe(
              Effect.annotateLogs("requestId", options.requestId)
            )
          )
        )
    ),
    Stream.interruptWhenDeferred(options.stopped)
  ),
  release: options.release
})
