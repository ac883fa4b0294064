/**
 * A streamed answer (an event stream) on a Node response: its headers at once, then each chunk as
 * it comes, on the app's runtime and the listener's scheduler of streamed bodies.
 */
import type { Exchange } from "@appexec/http"
import { Effect, FiberId, type Runtime, type Scheduler } from "effect"
import type { IncomingMessage, ServerResponse } from "node:http"

/**
 * How a listener runs effects: `fork` on the app's runtime (`Runtime.runFork` of it), and the
 * streamed bodies on `streams` (`SlicedScheduler`), so that the streams woken together by a change
 * run a slice at a time and the requests that came in meanwhile are answered between slices.
 */
export interface Runner {
  readonly fork: ReturnType<typeof Runtime.runFork<never>>
  readonly streams: Scheduler.Scheduler
}

/** Writes `chunk`; when Node buffers it, waits until the socket drains (or closes). */
const writeChunk = (response: ServerResponse, chunk: Uint8Array) =>
  response.write(chunk) ? Effect.void : Effect.async<void>((resume) => {
    const done = () => {
      response.off("drain", done)
      response.off("close", done)
      resume(Effect.void)
    }
    response.once("drain", done)
    response.once("close", done)
    return Effect.sync(() => {
      response.off("drain", done)
      response.off("close", done)
    })
  })

/**
 * Writes a streamed answer: the headers at once (no length: Node frames the body in chunks), then
 * each chunk as it comes, each written to the socket as it is made; the answer ends with the
 * chunks. The chunks run on the app's runtime and are interrupted when the client goes away; the
 * body is released either way.
 */
export const pipeBody = (
  run: Runner,
  message: IncomingMessage,
  response: ServerResponse,
  head: { readonly status: number; readonly headers: Readonly<Record<string, string>> },
  body: Exchange.StreamedBody
) => {
  response.writeHead(head.status, head.headers)
  if (message.method === "HEAD") {
    run.fork(body.release)
    return void response.end()
  }
  response.flushHeaders()
  // Started on this stack, so its finalizers are in place before anything can interrupt it.
  const fiber = run.fork(
    Effect.ensuring(
      Effect.withScheduler(body.run((chunk) => writeChunk(response, chunk)), run.streams),
      body.release
    ),
    { immediate: true }
  )
  fiber.addObserver(() => response.end())
  response.once("close", () => fiber.unsafeInterruptAsFork(FiberId.none))
}
