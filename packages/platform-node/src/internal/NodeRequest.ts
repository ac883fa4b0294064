/**
 * A Node request as the app sees it (`Exchange.ServerRequest`): its headers handed over as they
 * are, its body read only when an endpoint asks for it, within the endpoint's bound, counting the
 * bytes received so far (`received`).
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
 * passes the bound; the rest is read and dropped before the answer is written (`write`).
 */
const readBody = (message: IncomingMessage, maxBytes: number, progress: { received: number }) =>
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
        // Paused until `write` drains it: nothing is lost or buffered meanwhile.
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

/** The request `message` as the app reads it. */
export const requestOf = (message: IncomingMessage): Exchange.ServerRequest => {
  const progress = { received: 0 }
  return {
    method: message.method ?? "GET",
    url: message.url ?? "/",
    headers: headersOf(message.headers),
    remoteAddress: message.socket.remoteAddress,
    body: (maxBytes) => readBody(message, maxBytes, progress),
    received: () => progress.received
  }
}
