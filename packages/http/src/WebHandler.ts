/**
 * appexec as a web-standard `Request → Response` handler (for `Deno.serve`, Bun, service
 * workers, or any framework that speaks `fetch`), mountable under a base path. A web `Request`
 * does not carry the caller's address: the host passes it in (`clientAddress`) for the rate limit.
 */
import { Effect, type Layer, Runtime, type Scope } from "effect"
import * as AppexecHttp from "./AppexecHttp.js"
import { type BodyFailure, DRAIN_FACTOR, type ServerRequest } from "./internal/Exchange.js"

/** A web handler. `clientAddress` is the caller's IP, which a web `Request` does not carry. */
export type Handler = (request: Request, info?: { readonly clientAddress?: string }) => Promise<Response>

/** Reads the body of `request`, at most `maxBytes` (the rest drained up to a bound, then given up). */
const readBody = (request: Request, maxBytes: number) =>
  Effect.tryPromise({
    try: async (signal) => {
      if (request.body === null) return new Uint8Array()
      const reader = request.body.getReader()
      signal.addEventListener("abort", () => void reader.cancel())
      const chunks: Array<Uint8Array> = []
      let size = 0
      for (;;) {
        const { done, value } = await reader.read()
        if (done) break
        size += value.length
        if (size > maxBytes * DRAIN_FACTOR) {
          await reader.cancel()
          break
        }
        if (size <= maxBytes) chunks.push(value)
      }
      if (size > maxBytes) return { tooLarge: true as const }
      const bytes = new Uint8Array(size)
      let offset = 0
      for (const chunk of chunks) {
        bytes.set(chunk, offset)
        offset += chunk.length
      }
      return bytes
    },
    catch: (): BodyFailure => ({ _tag: "Unreadable" })
  }).pipe(
    Effect.flatMap((
      read
    ) => ("tooLarge" in read ? Effect.fail<BodyFailure>({ _tag: "TooLarge" }) : Effect.succeed(read)))
  )

const requestOf = (request: Request, clientAddress: string | undefined): ServerRequest => {
  const url = new URL(request.url)
  const headers: Record<string, string> = {}
  request.headers.forEach((value, name) => {
    headers[name] = value
  })
  return {
    method: request.method,
    url: `${url.pathname}${url.search}`,
    headers,
    remoteAddress: clientAddress,
    body: (maxBytes) => readBody(request, maxBytes)
  }
}

/** The handler of an app made with `AppexecHttp.make`. */
export const fromApp = (app: AppexecHttp.App): Handler => {
  const run = Runtime.runPromise(app.runtime)
  return async (request, info) => {
    const answer = await run(app.handle(requestOf(request, info?.clientAddress)), { signal: request.signal })
    const body = answer.body === undefined
      ? null
      : typeof answer.body === "string"
      ? answer.body
      : new Uint8Array(answer.body)
    return new Response(body, { status: answer.status, headers: answer.headers })
  }
}

/** The handler, inside an Effect program that provides appexec; it serves while the scope is open. */
export const make = (
  options: AppexecHttp.Options = {}
): Effect.Effect<Handler, never, AppexecHttp.Requirements | Scope.Scope> =>
  Effect.map(AppexecHttp.make(options), fromApp)

/**
 * The handler for a host that does not use Effect: `layer` provides appexec. `dispose` stops it
 * and releases the layer.
 */
export const fromLayer = async <E>(
  layer: Layer.Layer<AppexecHttp.Requirements, E>,
  options: AppexecHttp.Options = {}
): Promise<{ readonly handler: Handler; readonly dispose: () => Promise<void> }> => {
  const { app, dispose } = await AppexecHttp.fromLayer(layer, options)
  return { handler: fromApp(app), dispose }
}
