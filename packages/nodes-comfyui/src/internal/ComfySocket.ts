/**
 * A ComfyUI websocket (`/ws?clientId=…`) as a queue of messages: JSON events `{type, data}`,
 * binary preview frames (a 4-byte big-endian event type 1, a 4-byte format, 1 JPEG or 2 PNG,
 * then the image), and a last `Closed` when the socket ends. The socket closes with its scope.
 * It reaches the host that the run's HTTP requests reach, whose address the outbound client
 * has already judged.
 */
import { OutboundHttp } from "@appexec/core"
import { Duration, Effect, Option, Queue, Schema, type Scope } from "effect"
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
 * Opens the socket of `clientId` on `server` within `timeout`: its messages, or a failure when
 * it could not be opened (the run then polls).
 */
export const open = (
  server: string,
  clientId: string,
  timeout: Duration.DurationInput,
  headers: OutboundHttp.OutboundRequest["headers"] = {}
): Effect.Effect<Queue.Dequeue<Message>, string, Scope.Scope> =>
  Effect.gen(function*() {
    const messages = yield* Effect.acquireRelease(Queue.unbounded<Message>(), Queue.shutdown)
    const socket = yield* Effect.acquireRelease(
      Effect.sync(() =>
        new WebSocket(urlOf(server, clientId), {
          handshakeTimeout: Duration.toMillis(timeout),
          headers: OutboundHttp.wireHeaders(headers)
        })
      ),
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
