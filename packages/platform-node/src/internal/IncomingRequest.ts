/**
 * A Node request as the app reads it, wherever the host mounts the listener: the path as the
 * client sent it (Express and Connect strip their mount prefix from `url` and keep the whole path
 * in `originalUrl`), and the body read on demand from the stream, or, when a host's body parser
 * (`express.json()`, Fastify's parser) read the stream before the listener, from what the parser
 * left in `body` (JSON re-encoded, a string or bytes as they are); a body that was read and left
 * nowhere is refused with a message that says so, never waited for. The bytes received so far are
 * counted (`received`), for the pace of uploads.
 */
import type { Exchange } from "@appexec/http"
import { Effect } from "effect"
import type { IncomingHttpHeaders, IncomingMessage } from "node:http"

/**
 * Node's headers as the app reads them: one string per name. Node joins the values of a repeated
 * header itself (with ", ", or "; " for `cookie`) and keeps an array for `set-cookie` alone, so
 * only a request that sends `set-cookie` needs a copy; every other request's headers are handed
 * over as they are.
 */
const headersOf = (headers: IncomingHttpHeaders): Readonly<Record<string, string | undefined>> => {
  const setCookie = headers["set-cookie"]
  if (setCookie === undefined) return headers as Readonly<Record<string, string | undefined>>
  return { ...headers, "set-cookie": setCookie.join(", ") }
}

/**
 * Reads the body of `message`, at most `maxBytes`. A longer one fails `TooLarge` as soon as it
 * passes the bound; the rest is read and dropped before the answer is written.
 */
const readStream = (message: IncomingMessage, maxBytes: number, progress: { received: number }) =>
  Effect.async<Uint8Array, Exchange.BodyFailure>((resume) => {
    const chunks: Array<Buffer> = []
    let size = 0
    const cleanup = () => {
      message.off("data", onData)
      message.off("end", onEnd)
      message.off("error", onError)
      message.off("aborted", onError)
    }
    const onData = (chunk: Buffer) => {
      size += chunk.length
      progress.received = size
      if (size > maxBytes) {
        cleanup()
        // Paused until the listener drains it: nothing is lost or buffered meanwhile.
        message.pause()
        resume(Effect.fail({ _tag: "TooLarge" }))
      } else chunks.push(chunk)
    }
    const onEnd = () => {
      cleanup()
      resume(Effect.succeed(new Uint8Array(Buffer.concat(chunks, size))))
    }
    const onError = () => {
      cleanup()
      resume(Effect.fail({ _tag: "Unreadable" }))
    }
    message.on("data", onData)
    message.once("end", onEnd)
    message.once("error", onError)
    message.once("aborted", onError)
    return Effect.sync(cleanup)
  })

/** The refusal of a body that a host's parser read and left nowhere. */
export const CONSUMED = "The request body was read by the host before appexec (a body parser ahead of it) and " +
  "left nowhere appexec can read it: mount appexec before the body parser, or keep the parser off its path."

const utf8 = new TextEncoder()

/** The bytes of what a host's parser left in `body`, if it left something appexec can send on. */
const bytesOf = (body: unknown): Uint8Array | undefined => {
  if (body instanceof Uint8Array) return body
  if (typeof body === "string") return utf8.encode(body)
  // What a JSON parser makes (an object or an array), written again as JSON.
  if (typeof body === "object" && body !== null) return utf8.encode(JSON.stringify(body))
  return undefined
}

/**
 * The body of a request whose stream a host's parser read: from `body` when it holds something,
 * within `maxBytes`; else refused. Each is logged: the first time a parser is met at info (what
 * happens and how to avoid it), then at debug; a refusal as a warning.
 */
const parsedBody = (body: unknown, maxBytes: number, firstTime: () => boolean) => {
  const bytes = bytesOf(body)
  if (bytes === undefined) {
    return Effect.zipRight(
      Effect.logWarning(`request refused: ${CONSUMED}`),
      Effect.fail<Exchange.BodyFailure>({ _tag: "Unreadable", reason: CONSUMED })
    )
  }
  const said = firstTime()
    ? Effect.logInfo(
      "a host body parser read the request body before appexec: appexec uses the parsed body (JSON written " +
        "again); mount appexec before the parser to have bodies passed through untouched"
    )
    : Effect.logDebug("request body taken from the host's parsed body")
  return Effect.zipRight(
    said,
    bytes.byteLength > maxBytes ? Effect.fail<Exchange.BodyFailure>({ _tag: "TooLarge" }) : Effect.succeed(bytes)
  )
}

/** Whether a host read the request's stream before the listener got it. */
export const wasRead = (message: IncomingMessage): boolean => message.readableEnded

/** The adapter of one listener: requests as the app reads them. */
export const adapter = (): (message: IncomingMessage) => Exchange.ServerRequest => {
  let parserMet = false
  const firstTime = () => {
    const first = !parserMet
    parserMet = true
    return first
  }
  return (message) => {
    // What a host framework may have added to the request.
    const originalUrl: unknown = Reflect.get(message, "originalUrl")
    const progress = { received: 0 }
    return {
      method: message.method ?? "GET",
      url: typeof originalUrl === "string" ? originalUrl : message.url ?? "/",
      headers: headersOf(message.headers),
      remoteAddress: message.socket.remoteAddress,
      body: (maxBytes) =>
        wasRead(message)
          ? parsedBody(Reflect.get(message, "body"), maxBytes, firstTime)
          : readStream(message, maxBytes, progress),
      received: () => progress.received
    }
  }
}
