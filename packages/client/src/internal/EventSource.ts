/**
 * The reading side of an execution's event stream, as a browser's `EventSource` has it: the
 * connections one after the other, each parsed (`ServerSentEvents`) and decoded into typed
 * events, reopened with `Last-Event-ID` after a drop, until the terminal event (`follow`); a wait
 * on them (`waitFor`); and when a wait polls instead (`pollInstead`).
 */
import type * as Execution from "@appexec/api/Execution"
import * as Live from "@appexec/api/Live"
import { Duration, Effect, Either, Option, Random, Ref, Schema, Stream } from "effect"
import { ApiError, NetworkError, type RequestError } from "../ClientError.js"
import { IDLE_TIMEOUT, isRouteMissing, isTerminal, type LiveEvent, type StreamOptions } from "../EventStream.js"
import type { Seen } from "../Polling.js"
import * as RetryPolicy from "../RetryPolicy.js"
import * as ServerSentEvents from "../ServerSentEvents.js"

/**
 * Opens one connection to the stream, resuming after `lastEventId` when given: the body of a
 * `200 text/event-stream` answer. A refused request fails with the client's error.
 */
export type Open = (lastEventId: string | undefined) => Effect.Effect<Stream.Stream<Uint8Array, unknown>, RequestError>

const decoders = {
  execution: Schema.decodeUnknownEither(Schema.parseJson(Live.EventData.execution)),
  progress: Schema.decodeUnknownEither(Schema.parseJson(Live.EventData.progress)),
  log: Schema.decodeUnknownEither(Schema.parseJson(Live.EventData.log)),
  preview: Schema.decodeUnknownEither(Schema.parseJson(Live.EventData.preview))
}

const undecodable = (message: ServerSentEvents.Message, error: { readonly message: string }) =>
  new ApiError({
    status: 200,
    code: "unexpected_response",
    message: `The '${message.event}' event ${message.lastEventId} of the event stream did not decode: ${error.message}`
  })

/**
 * The typed event of a message, or nothing for an event name this client does not know (a newer
 * server may send more); a known event whose data does not decode is an `unexpected_response`.
 */
const decode = (message: ServerSentEvents.Message): Either.Either<Option.Option<LiveEvent>, ApiError> => {
  const id = message.lastEventId
  const typed = <A>(decoded: Either.Either<A, { readonly message: string }>, make: (data: A) => LiveEvent) =>
    Either.match(decoded, {
      onLeft: (error) => Either.left(undecodable(message, error)),
      onRight: (data) => Either.right(Option.some(make(data)))
    })
  switch (message.event) {
    case "execution":
      return typed(decoders.execution(message.data), (data) => ({ event: "execution", id, data }))
    case "progress":
      return typed(decoders.progress(message.data), (data) => ({ event: "progress", id, data }))
    case "log":
      return typed(decoders.log(message.data), (data) => ({ event: "log", id, data }))
    case "preview":
      return typed(decoders.preview(message.data), (data) => ({ event: "preview", id, data }))
    default:
      return Either.right(Option.none())
  }
}

/** What `follow` needs besides the connections. */
export interface FollowOptions extends StreamOptions {
  /** The stream's URL, for the error of a stream given up. */
  readonly url: string
  /** Bounds of the reconnections (`maxRetries`, backoff). */
  readonly retry?: RetryPolicy.RetryOptions
}

/** What a connection gives: a typed event, or the server's word that it stops (`reconnect`). */
type Item = LiveEvent | typeof Live.RECONNECT_EVENT

/** The items of a chunk's messages, up to a `reconnect` (the server sends nothing after it). */
const itemsOf = (messages: ReadonlyArray<ServerSentEvents.Message>): Either.Either<ReadonlyArray<Item>, ApiError> => {
  const items: Array<Item> = []
  for (const message of messages) {
    if (message.event === Live.RECONNECT_EVENT) {
      items.push(Live.RECONNECT_EVENT)
      break
    }
    const decoded = decode(message)
    if (Either.isLeft(decoded)) return Either.left(decoded.left)
    if (Option.isSome(decoded.right)) items.push(decoded.right.value)
  }
  return Either.right(items)
}

/** A connection ended before the terminal event: the body broke, went silent, or ended. */
class Dropped {
  readonly _tag = "Dropped"
}

/**
 * The events of the connections `open` makes, one after the other, until the terminal
 * `execution` event: after a drop it waits (the `RetryPolicy` backoff, or the server's `retry:`
 * when longer) and opens the next one with `Last-Event-ID` set to the last id received. After the
 * `reconnect` event of a stopping server it waits the server's `retry:` alone, and the
 * connection does not count as a drop.
 */
export const follow = (open: Open, options: FollowOptions): Stream.Stream<LiveEvent, RequestError> =>
  Stream.unwrap(Effect.gen(function*() {
    const retry = options.retry ?? {}
    const lastId = yield* Ref.make(options.lastEventId)
    const ended = yield* Ref.make(false)
    // Connections in a row that dropped before anything (an event, a heartbeat) arrived.
    const drops = yield* Ref.make(0)
    const serverRetryMs = yield* Ref.make(0)
    // The last connection ended with the server's `reconnect` event.
    const toldToReconnect = yield* Ref.make(false)

    const connection: Stream.Stream<LiveEvent, RequestError> = Stream.unwrap(
      Effect.map(Effect.flatMap(Ref.get(lastId), open), (body) =>
        body.pipe(
          Stream.mapError(() => new Dropped()),
          Stream.timeoutFail(() => new Dropped(), IDLE_TIMEOUT),
          Stream.tap(() => Ref.set(drops, 0)),
          Stream.decodeText(),
          Stream.mapAccum(ServerSentEvents.initial, (state, text) => {
            const [next, messages] = ServerSentEvents.feed(state, text)
            return [next, { retryMs: next.retryMs, messages }] as const
          }),
          Stream.mapEffect(({ messages, retryMs }) =>
            Effect.zipRight(retryMs === undefined ? Effect.void : Ref.set(serverRetryMs, retryMs), itemsOf(messages))
          ),
          Stream.flattenIterables,
          // A `reconnect` ends the connection: the server stops, and another one takes the stream on.
          Stream.takeUntil((item) => item === Live.RECONNECT_EVENT || isTerminal(item)),
          Stream.tap((item) =>
            item === Live.RECONNECT_EVENT
              ? Ref.set(toldToReconnect, true)
              : Effect.zipRight(Ref.set(lastId, item.id), isTerminal(item) ? Ref.set(ended, true) : Effect.void)
          ),
          Stream.filter((item): item is LiveEvent => item !== Live.RECONNECT_EVENT),
          Stream.catchAll((error) => (error instanceof Dropped ? Stream.empty : Stream.fail(error)))
        ))
    )

    const reconnect: Effect.Effect<Stream.Stream<LiveEvent, RequestError>> = Effect.gen(function*() {
      if (yield* Ref.get(ended)) return Stream.empty
      // Told by a stopping server: no drop, and no backoff beyond the server's `retry:`.
      if (yield* Ref.getAndSet(toldToReconnect, false)) {
        yield* Effect.sleep(Duration.millis(yield* Ref.get(serverRetryMs)))
        return following
      }
      const dropped = yield* Ref.getAndUpdate(drops, (n) => n + 1)
      if (dropped >= (retry.maxRetries ?? RetryPolicy.defaults.maxRetries)) {
        return Stream.fail(
          new NetworkError({
            reason: "network",
            method: "GET",
            url: options.url,
            sent: true,
            message: `GET ${options.url}: the event stream broke ${dropped + 1} times in a row; gave up.`
          })
        )
      }
      const delayMs = Math.max(RetryPolicy.backoff(retry, dropped, yield* Random.next), yield* Ref.get(serverRetryMs))
      yield* Effect.sleep(Duration.millis(delayMs))
      return following
    })
    const following: Stream.Stream<LiveEvent, RequestError> = Stream.concat(connection, Stream.unwrap(reconnect))
    return following
  }))

/**
 * Follows `events` to the terminal execution and returns it, telling `seen` of every `execution`
 * event and `onEvent` of every event.
 */
export const waitFor = <E>(
  events: Stream.Stream<LiveEvent, E>,
  seen: Seen,
  onEvent?: (event: LiveEvent) => void | Effect.Effect<void>
): Effect.Effect<Execution.Execution, E> =>
  Stream.runFoldEffect(events, Option.none<Execution.Execution>(), (last, event) =>
    Effect.gen(function*() {
      if (onEvent !== undefined) {
        const after = onEvent(event)
        if (Effect.isEffect(after)) yield* after
      }
      if (event.event !== "execution") return last
      yield* seen(event.data)
      return Option.some(event.data)
    })).pipe(
      // `follow` ends only after the terminal event.
      Effect.flatMap(Option.match({
        onNone: () => Effect.dieMessage("The event stream ended without an execution."),
        onSome: Effect.succeed
      }))
    )

/**
 * Whether a wait whose stream failed with `error` polls instead: always, except for the refusals
 * polling would get too (a bad request, the key, an execution that does not exist).
 */
export const pollInstead = (error: RequestError): boolean =>
  error._tag === "NetworkError" || isRouteMissing(error) || ![400, 401, 403, 404].includes(error.status)
