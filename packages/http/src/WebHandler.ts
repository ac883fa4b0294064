/**
 * appexec as a web-standard `Request → Response` handler (for `Deno.serve`, Bun, service
 * workers, or any framework that speaks `fetch`), mountable under a base path. A web `Request`
 * does not carry the caller's address: the host passes it in (`clientAddress`) for the rate limit.
 * An event stream is answered at once, its body a `ReadableStream` that gets each event as it
 * comes and stops when the reader cancels it or the request's `signal` aborts.
 */
import { concat } from "@appexec/core/Bytes"
import { Effect, type Fiber, FiberId, type Layer, Runtime, type Scope } from "effect"
import * as AppexecHttp from "./AppexecHttp.js"
import {
  type BodyFailure,
  DRAIN_FACTOR,
  isStreamed,
  type ServerRequest,
  type StreamedBody
} from "./internal/Exchange.js"

/** A web handler. `clientAddress` is the caller's IP, which a web `Request` does not carry. */
export type Handler = (request: Request, info?: { readonly clientAddress?: string }) => Promise<Response>

/** Reads the body of `request`, at most `maxBytes` (the rest drained up to a bound, then given up). */
const readBody = (request: Request, maxBytes: number, progress: { received: number }) =>
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
        progress.received = size
        if (size > maxBytes * DRAIN_FACTOR) {
          await reader.cancel()
          break
        }
        if (size <= maxBytes) chunks.push(value)
      }
      if (size > maxBytes) return { tooLarge: true as const }
      return concat(chunks, size)
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
  const progress = { received: 0 }
  return {
    method: request.method,
    url: `${url.pathname}${url.search}`,
    headers,
    remoteAddress: clientAddress,
    body: (maxBytes) => readBody(request, maxBytes, progress),
    received: () => progress.received
  }
}

/**
 * A streamed body as a web stream: its chunks run on `runtime` and are enqueued as they come, the
 * next one taken once the reader wants more. The run stops when the reader cancels or `signal`
 * (the request's) aborts, and the body is released either way.
 */
const readableOf = (runtime: Runtime.Runtime<never>, body: StreamedBody, signal: AbortSignal) => {
  const fork = Runtime.runFork(runtime)
  let fiber: Fiber.RuntimeFiber<void> | undefined
  let wanted: (() => void) | undefined
  let canceled = false
  const stop = () => {
    if (fiber === undefined) return void fork(body.release)
    fiber.unsafeInterruptAsFork(FiberId.none)
  }
  return new ReadableStream<Uint8Array>({
    start(controller) {
      if (signal.aborted) {
        stop()
        return controller.close()
      }
      const enqueue = (chunk: Uint8Array) =>
        Effect.async<void>((resume) => {
          controller.enqueue(chunk)
          if ((controller.desiredSize ?? 1) > 0) return resume(Effect.void)
          wanted = () => resume(Effect.void)
          return Effect.sync(() => void (wanted = undefined))
        })
      fiber = fork(Effect.ensuring(body.run(enqueue), body.release))
      signal.addEventListener("abort", stop, { once: true })
      fiber.addObserver(() => {
        signal.removeEventListener("abort", stop)
        // A stream its reader canceled is closed already.
        if (!canceled) controller.close()
      })
    },
    pull() {
      const resume = wanted
      wanted = undefined
      resume?.()
    },
    cancel() {
      canceled = true
      stop()
    }
  })
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
      : isStreamed(answer.body)
      ? readableOf(app.runtime, answer.body, request.signal)
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
