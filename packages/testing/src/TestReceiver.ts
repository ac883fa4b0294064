/**
 * A real webhook receiver for tests: an HTTP server on 127.0.0.1 (port 0) that records every
 * request with its raw body and answers as the test's current policy says — a status code,
 * `"hold"` to keep the request open without an answer, or a function that writes the response
 * itself. Closed with the scope, open connections included.
 *
 * ```ts
 * const receiver = yield* TestReceiver.start()            // answers 200
 * yield* appexec.executions.start(principal, appId, inputs, { webhook: receiver.url() })
 * const request = yield* receiver.next                     // the next request, or a failure after 5 s
 * ```
 */
import { Effect, Queue, type Scope } from "effect"
import { createPublicKey, verify } from "node:crypto"
import type { IncomingHttpHeaders, ServerResponse } from "node:http"
import * as LocalServer from "./internal/LocalServer.js"

/** One request as the receiver got it. */
export interface Received {
  readonly method: string
  readonly url: string
  readonly headers: IncomingHttpHeaders
  readonly rawBody: Uint8Array
  /** The execution id of a webhook (its request id header), as sent. */
  readonly executionId: string
  /** 1 for the first request of this execution id, 2 for the second, … */
  readonly number: number
  /** Wall-clock time of arrival (epoch ms). */
  readonly at: number
  /** What the receiver answered: a status, `"hold"`, or `"custom"` for a writer of the policy's. */
  readonly answer: number | "hold" | "custom"
}

/** How the receiver answers: a status, `"hold"` (never answer), or a writer of its own. */
export type Answer = number | "hold" | ((response: ServerResponse) => void)

/** Chooses the answer to each request. */
export type Policy = (request: Omit<Received, "answer">) => Answer

/** A running receiver. */
export interface TestReceiver {
  /** The receiver's URL at `path` (default `/hook`). */
  readonly url: (path?: string) => string
  readonly port: number
  /** Every request so far, in arrival order. */
  readonly received: ReadonlyArray<Received>
  /** The requests of one execution id, in order. */
  readonly of: (executionId: string) => ReadonlyArray<Received>
  /** The next request not yet taken; fails after 5 s rather than hang the test. */
  readonly next: Effect.Effect<Received, Error>
  /** Answers later requests with `policy`. */
  readonly setPolicy: (policy: Policy) => void
}

const REQUEST_ID_HEADER = "x-service-webhook-request-id"

/** Starts a receiver answering with `policy` (default: 200 to everything). */
export const start = (policy: Policy = () => 200): Effect.Effect<TestReceiver, never, Scope.Scope> =>
  Effect.gen(function*() {
    let current = policy
    const received: Array<Received> = []
    const pending = yield* Queue.unbounded<Received>()
    const port = yield* LocalServer.listen((req, res, body) => {
      const executionId = String(req.headers[REQUEST_ID_HEADER] ?? "")
      const arrival = {
        method: req.method ?? "",
        url: req.url ?? "",
        headers: req.headers,
        rawBody: new Uint8Array(body),
        executionId,
        number: received.filter((r) => r.executionId === executionId).length + 1,
        at: Date.now()
      }
      const answer = current(arrival)
      const request: Received = { ...arrival, answer: typeof answer === "function" ? "custom" : answer }
      received.push(request)
      Queue.unsafeOffer(pending, request)
      if (typeof answer === "number") res.writeHead(answer).end()
      else if (answer !== "hold") answer(res)
    })
    return {
      port,
      url: (path = "/hook") => `http://127.0.0.1:${port}${path}`,
      received,
      of: (executionId) => received.filter((r) => r.executionId === executionId),
      next: LocalServer.takeWithin(pending, { message: "no request arrived within 5 s", live: false }),
      setPolicy: (next) => {
        current = next
      }
    }
  })

/**
 * Whether `request` carries a valid webhook signature under one of `keys`, checked with
 * node:crypto alone (`createPublicKey` from the published JWK): no appexec code involved.
 */
export const verifiedByNodeCrypto = (
  keys: ReadonlyArray<{ readonly kty: string; readonly crv: string; readonly x: string }>,
  request: Pick<Received, "headers" | "rawBody">,
  brand = "service"
): boolean => {
  const timestamp = String(request.headers[`x-${brand}-webhook-timestamp`])
  const signature = Buffer.from(String(request.headers[`x-${brand}-webhook-signature`]), "hex")
  const message = Buffer.concat([Buffer.from(`${timestamp}.`), request.rawBody])
  return keys.some((jwk) =>
    verify(null, message, createPublicKey({ key: { kty: jwk.kty, crv: jwk.crv, x: jwk.x }, format: "jwk" }), signature)
  )
}
