/**
 * A ComfyUI websocket (`/ws?clientId=…`) as a queue of messages: JSON events `{type, data}`,
 * binary preview frames (a 4-byte big-endian event type 1, a 4-byte format, 1 JPEG or 2 PNG,
 * then the image), and a last `Closed` when the socket ends. The socket closes with its scope.
 * It goes through the outbound guard as the run's HTTP requests do: its host's address is checked
 * by the outbound client (`connectTarget`: a private address refused unless the operator allowed
 * the host, as the configured ComfyUI servers are) and the socket connects to that address only;
 * with a client that cannot say, a literal address it refuses (`refusal`) is not opened.
 */
import { OutboundHttp } from "@appexec/core"
import { Duration, Effect, Option, Queue, Schema, type Scope } from "effect"
import type { LookupFunction } from "node:net"
import WebSocket from "ws"

/** One message of the socket. */
export type Message =
  | { readonly _tag: "Event"; readonly type: string; readonly data: Readonly<Record<string, unknown>> }
  | { readonly _tag: "Preview"; readonly contentType: "image/jpeg" | "image/png"; readonly bytes: Uint8Array }
  | { readonly _tag: "Closed" }

/** The socket's URL of a server's root URL and a client id. */
export const urlOf = (server: string, clientId: string) =>
  `${server.replace(/^http/, "ws")}/ws?clientId=${encodeURIComponent(clientId)}`

const messageOf = (raw: WebSocket.RawData, binary: boolean): Message | undefined => {
  const buffer = Buffer.isBuffer(raw) ? raw : Array.isArray(raw) ? Buffer.concat(raw) : Buffer.from(raw)
  if (binary) {
    if (buffer.length < 8 || buffer.readUInt32BE(0) !== 1) return undefined
    const format = buffer.readUInt32BE(4)
    // 1 JPEG, 2 PNG; a frame of another format is not an image appexec shows.
    if (format !== 1 && format !== 2) return undefined
    return {
      _tag: "Preview",
      contentType: format === 2 ? "image/png" : "image/jpeg",
      bytes: new Uint8Array(buffer.subarray(8))
    }
  }
  return Option.getOrUndefined(
    Option.map(decodeEvent(buffer.toString("utf8")), (event) => ({ _tag: "Event", ...event }) as const)
  )
}

const decodeEvent = Schema.decodeUnknownOption(
  Schema.parseJson(
    Schema.Struct({ type: Schema.String, data: Schema.Record({ key: Schema.String, value: Schema.Unknown }) })
  )
)

/**
 * The lookup that pins the socket of `url` to the address the outbound client checked, none when
 * the client cannot check one (then only a literal address it refuses fails); its refusal's
 * message when the address is not allowed.
 */
const guardedLookup = (url: string) =>
  Effect.gen(function*() {
    const http = yield* OutboundHttp.OutboundHttp
    if (http.connectTarget === undefined) {
      const refused = Option.flatMap(
        Option.fromNullable(http.refusal),
        (refusal) => refusal(url.replace(/^ws/, "http"))
      )
      return Option.isSome(refused) ? yield* Effect.fail(refused.value.message) : undefined
    }
    const target = yield* Effect.mapError(http.connectTarget(url), (error) => error.message)
    const lookup: LookupFunction = (_hostname, options, callback) => {
      if (options.all === true) callback(null, [{ address: target.address, family: target.family }])
      else callback(null, target.address, target.family)
    }
    return lookup
  })

/**
 * Opens the socket of `clientId` on `server` within `timeout`: its messages, or a failure when
 * it could not be opened (the run then polls).
 */
export const open = (
  server: string,
  clientId: string,
  timeout: Duration.DurationInput,
  headers: OutboundHttp.OutboundRequest["headers"] = {}
): Effect.Effect<Queue.Dequeue<Message>, string, Scope.Scope | OutboundHttp.OutboundHttp> =>
  Effect.gen(function*() {
    const lookup = yield* guardedLookup(urlOf(server, clientId))
    const messages = yield* Effect.acquireRelease(Queue.unbounded<Message>(), Queue.shutdown)
    // `ws` hands its options to the request it makes, `lookup` included (not in its types).
    const options: WebSocket.ClientOptions & { readonly lookup?: LookupFunction } = {
      handshakeTimeout: Duration.toMillis(timeout),
      headers: OutboundHttp.wireHeaders(headers),
      ...(lookup === undefined ? {} : { lookup })
    }
    const socket = yield* Effect.acquireRelease(
      Effect.sync(() => new WebSocket(urlOf(server, clientId), options)),
      (socket) => Effect.sync(() => socket.terminate())
    )
    socket.on("message", (raw, binary) => {
      const message = messageOf(raw, binary)
      if (message !== undefined) Queue.unsafeOffer(messages, message)
    })
    socket.on("close", () => Queue.unsafeOffer(messages, { _tag: "Closed" }))
    yield* Effect.async<void, string>((resume) => {
      socket.once("open", () => resume(Effect.void))
      socket.once("error", (error) => resume(Effect.fail(error.message)))
    })
    return messages
  })
